// Package examples holds runnable programs that show the library in use: oduflowctl (a CLI
// and a self-contained demo against the built-in Salt master simulator), controller (a
// deployable controller service: an authenticated HTTP API with administrator and observer
// roles, custom states, adoption, drain, metrics) and harness (integration tests against a
// real salt-master). It has no code of its own.
//
// It is a module of its own, github.com/oduflow/oduflow-go/examples (controller is another one), because
// oduflowctl imports oduflow/etcdstore: the library's module requires neither etcd nor the programs'
// dependencies. From the repository root, the go.work there builds it from the working copy:
// go run ./examples/oduflowctl demo.
package examples
