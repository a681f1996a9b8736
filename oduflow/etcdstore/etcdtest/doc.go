// Package etcdtest holds the tests of oduflow/etcdstore that run a real etcd server (embedded, on loopback
// ports chosen at run time). It is its own module so that the server's dependencies never enter the graph
// of the oduflow-go or oduflow/etcdstore modules. Run: (cd oduflow/etcdstore/etcdtest && go vet ./... &&
// go test -race -count=1 ./...), or scripts/test.sh -module oduflow/etcdstore/etcdtest.
//
// Besides the store's own tests it runs the oduflowtest ClaimStore conformance suite against the store
// (TestConformance: child processes reach the parent's embedded server through the location, an etcd://
// URL), and end-to-end tests of the oduflowctl binary, built from the examples module (the working copy,
// through the go.work at the repository root), with --claims etcd://... (TestCLIStartsOnceAcrossDispatchers,
// TestClaimsMigrate), and of dispatcher processes SIGKILLed at each worker step
// (TestKillDispatcherAtEachStep: the test binary re-executed as a dispatcher, see runCrashChild). The fake Salt masters are salt/salttest's; the minion
// behind them is protoMinion, a minimal protocol-1 oduflow_job handler.
package etcdtest
