//go:build tools

package tools

import (
	_ "github.com/cockroachdb/errors"
	_ "github.com/go-zeromq/zmq4"
	_ "github.com/google/uuid"
	_ "github.com/vmihailenco/msgpack/v5"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
)
