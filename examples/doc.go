// Package examples holds runnable programs that show the library in use: oduflowctl (a CLI
// and a self-contained demo against the built-in Salt master simulator), embed (a controller
// service behind a small HTTP API) and harness (integration tests against a real
// salt-master). It has no code of its own.
package examples
