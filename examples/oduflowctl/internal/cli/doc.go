// Package cli is oduflowctl's implementation, kept out of package main so that it can be
// tested in-process as well as through the built binary. Run is the whole program.
package cli
