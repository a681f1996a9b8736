package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
)

// serveHello is the first line the serve child prints.
type serveHello struct {
	Client string `json:"client"`
}

func freeURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// cmdServe is the etcd member child: one member (fsync on, as in production) with its data directory
// inside -dir; it prints a serveHello line and serves until its stdin says quit or closes.
func cmdServe(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	base := fs.String("dir", os.TempDir(), "parent of the data directory")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(*base, "etcdbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	peer, err := freeURL()
	if err != nil {
		return nil, err
	}
	client, err := freeURL()
	if err != nil {
		return nil, err
	}
	pu, _ := url.Parse(peer)
	cu, _ := url.Parse(client)
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "bench", dir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.InitialCluster = "bench=" + peer
	cfg.LogLevel = "fatal" // a Close logs its closed listeners at error level
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("member not ready")
	}
	if err := benchkit.PrintHello(serveHello{Client: client}); err != nil {
		return nil, err
	}
	// The member takes no requests on its stdin: any line is answered with an empty object.
	return nil, benchkit.AnswerLines(ctx, func(string) any { return struct{}{} })
}

// startServer starts the etcd member child and returns its client URL.
func startServer(ctx context.Context, dir string) (*benchkit.Child, string, error) {
	var h serveHello
	c, err := benchkit.StartChild(ctx, &h, "serve", "-dir", dir)
	if err != nil {
		return nil, "", err
	}
	return c, h.Client, nil
}
