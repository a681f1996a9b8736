// Package etcdtest holds the tests of oduflow/etcdstore that run a real etcd server (embedded, on loopback
// ports chosen at run time). It is its own module so that the server's dependencies never enter the main
// module's graph. Run: (cd oduflow/etcdstore/etcdtest && go test -race -count=1 ./...).
package etcdtest
