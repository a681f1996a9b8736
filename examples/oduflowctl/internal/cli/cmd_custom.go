package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/oduflow/oduflow-go/profiles"
)

func cmdCustom(e *env, args []string) error {
	usage := "custom validate FILE | digest FILE | start MINION FILE [REQUEST_ID] [--again] [--wait] | status MINION REQUEST_ID"
	if len(args) == 0 {
		return usagef("custom: missing subcommand: want %s", usage)
	}
	switch args[0] {
	case "validate":
		return cmdCustomValidate(e, args[1:])
	case "digest":
		return cmdCustomDigest(e, args[1:])
	case "start":
		return cmdCustomStart(e, args[1:])
	case "status":
		return cmdCustomStatus(e, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(e.stderr, "Usage: oduflowctl %s\n\n"+
			"Custom Salt states: plain YAML, validated and compiled to Salt high data without executing\n"+
			"anything; the digest is the SHA-256 of its canonical JSON. Each subcommand has --help.\n", usage)
		return flag.ErrHelp
	}
	return usagef("custom: unknown subcommand %q: want validate, digest, start or status", args[0])
}

// readSource reads a custom state file, at most profiles.MaxSourceBytes (+1 so that the
// validator reports too_large itself).
func readSource(cmd, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("%s: cannot read %q: %v", cmd, path, rootCause(err))
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, profiles.MaxSourceBytes+1))
	if err != nil {
		return nil, usagef("%s: cannot read %q: %v", cmd, path, rootCause(err))
	}
	return src, nil
}

// rootCause is the innermost error of err's chain (for *os.PathError, the errno's text: "no such file or
// directory"), so that the message names the path once, in the CLI's own words.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// customInvalid reports an invalid source: one line naming the file, line, column and code.
func (e *env) customInvalid(cmd, path string, err error) error {
	var ce *profiles.CustomError
	if !errors.As(err, &ce) {
		return failedf("%s: %s: %v", cmd, path, err)
	}
	if p, perr := e.printer(); perr == nil && p.json {
		_ = p.value(map[string]any{"file": path, "valid": false, "code": ce.Code, "message": ce.Message,
			"line": ce.Line, "column": ce.Column}, nil)
	}
	return usagef("%s: %s:%d:%d: %s: %s", cmd, path, ce.Line, ce.Column, ce.Code, ce.Message)
}

func cmdCustomValidate(e *env, args []string) error {
	fs := newFlagSet("custom validate", "custom validate FILE\n\n"+
		"Validates a custom state source without executing anything. Exit status 0 when valid, 2 when\n"+
		"invalid, with the error code, line and column.", e.g, e.stderr)
	pos, err := parseArgs(fs, args, 1, 1, "FILE")
	if err != nil {
		return err
	}
	src, err := readSource("custom validate", pos[0])
	if err != nil {
		return err
	}
	p, err := e.printer()
	if err != nil {
		return err
	}
	if err := profiles.ValidateCustom(src); err != nil {
		return e.customInvalid("custom validate", pos[0], err)
	}
	return p.value(map[string]any{"file": pos[0], "valid": true}, func(w io.Writer) {
		fmt.Fprintf(w, "%s: valid\n", pos[0])
	})
}

func cmdCustomDigest(e *env, args []string) error {
	fs := newFlagSet("custom digest", "custom digest FILE\n\n"+
		"Validates and compiles a custom state source and prints its digest: the hex SHA-256 of the\n"+
		"canonical JSON (RFC 8785) of its high data, so formatting changes do not change it.", e.g, e.stderr)
	pos, err := parseArgs(fs, args, 1, 1, "FILE")
	if err != nil {
		return err
	}
	src, err := readSource("custom digest", pos[0])
	if err != nil {
		return err
	}
	p, err := e.printer()
	if err != nil {
		return err
	}
	c, err := profiles.CompileCustom(src)
	if err != nil {
		return e.customInvalid("custom digest", pos[0], err)
	}
	return p.value(map[string]any{"file": pos[0], "digest": c.Digest, "states": len(c.HighData)}, func(w io.Writer) {
		fmt.Fprintf(w, "%s  %s (%d states)\n", c.Digest, pos[0], len(c.HighData))
	})
}
