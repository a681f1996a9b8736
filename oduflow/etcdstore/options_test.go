package etcdstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in     string
		eps    []string
		prefix string
		tls    bool
	}{
		{"etcd://10.0.0.1:2379/oduflow/prod", []string{"http://10.0.0.1:2379"}, "/oduflow/prod", false},
		{"etcd://a:1,b:2,c:3", []string{"http://a:1", "http://b:2", "http://c:3"}, DefaultPrefix, false},
		{"etcd://[::1]:2379/x/", []string{"http://[::1]:2379"}, "/x", false},
		{"etcds://e1:2379,e2:2379/p", []string{"https://e1:2379", "https://e2:2379"}, "/p", true},
	} {
		opts, err := ParseURL(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		var c config
		for _, o := range opts {
			o(&c)
		}
		if strings.Join(c.endpoints, " ") != strings.Join(tc.eps, " ") || c.prefix != tc.prefix || c.useTLS != tc.tls {
			t.Fatalf("%s: %+v", tc.in, c)
		}
	}
	for _, bad := range []string{
		"", "http://a:1/p", "etcd:///p", "etcd://a/p", "etcd://a:0/p", "etcd://a:99999", "etcd://a:1,/p",
		"etcd://a:1/p?x=1", "etcd://a:1/p#f", "etcd://a:1/p//q", "etcd://a:1/p q",
		"etcd://user:hunter2@a:1/p",
	} {
		_, err := ParseURL(bad)
		if !errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("%q accepted or untyped: %v", bad, err)
		}
		if strings.Contains(err.Error(), "hunter2") || (bad != "" && strings.Contains(err.Error(), bad)) {
			t.Fatalf("error echoes the URL: %v", err)
		}
	}
}

func TestOpenRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string][]Option{
		"no endpoint": {WithPrefix("/x")},
		"bad prefix":  {WithEndpoints("127.0.0.1:1"), WithPrefix("x")},
		"bad ttl":     {WithEndpoints("127.0.0.1:1"), WithTTL(0)},
		"half tls":    {WithEndpoints("127.0.0.1:1"), WithTLSFiles("cert.pem", "", "")},
	} {
		if _, err := Open(ctx, opts...); !errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Nobody listens: Open fails within the dial timeout and never prints the password.
	t0 := time.Now()
	_, err := Open(ctx, WithEndpoints("127.0.0.1:1"), WithDialTimeout(300*time.Millisecond),
		WithAuth("oduflow", "s3cr3t-pw"))
	if err == nil || time.Since(t0) > 5*time.Second {
		t.Fatalf("Open without a server: %v after %v", err, time.Since(t0))
	}
	if strings.Contains(err.Error(), "s3cr3t-pw") || strings.Contains(strings.ToLower(err.Error()), "password") {
		t.Fatalf("password in error: %v", err)
	}
}

func TestWriteErrClassification(t *testing.T) {
	for _, tc := range []struct {
		err     error
		unknown bool
	}{
		{context.DeadlineExceeded, true},
		{context.Canceled, true},
		{status.Error(codes.Unavailable, "etcdserver: request timed out"), true},
		{status.Error(codes.Unknown, "etcdserver: leader changed"), true},
		{errors.New("transport is closing"), true},
		{status.Error(codes.InvalidArgument, "etcdserver: too many operations in txn request"), false},
		{status.Error(codes.PermissionDenied, "etcdserver: permission denied"), false},
		{status.Error(codes.ResourceExhausted, "etcdserver: mvcc: database space exceeded"), false},
	} {
		got := errors.Is(writeErr(tc.err, "x"), ErrOutcomeUnknown)
		if got != tc.unknown {
			t.Fatalf("%v: unknown=%v", tc.err, got)
		}
	}
}
