package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt/salttest"
)

// dialFrom is an HTTP client whose connections leave from the loopback address src.
func dialFrom(src string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext,
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// F3: the real controller process (main, its listener) with 256 descriptors, under 400 slow-header
// connections from one address and 40,000 wrong-token requests from another: every /healthz and /readyz
// of a third address answers 200, the refusals are counted (one audit line per source and reason per
// interval, not one each), and no descriptor runs out. Before: no connection bound (4 of 14 /readyz
// answered, EMFILE) and one audit line per refusal (41,765 lines for 41,764 requests).
func TestF3FloodLeavesHealthAnswering(t *testing.T) {
	// Not parallel: it floods the listener and bounds how long the flood takes; other tests would share the cores it measures.
	if testing.Short() {
		t.Skip("-short: a 40k-request flood")
	}
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "master"), 0o700))
	sim, err := salttest.Start(context.Background(), salttest.WithDir(filepath.Join(dir, "master")))
	must(err)
	t.Cleanup(func() { _ = sim.Close() })
	sum := sha256.Sum256([]byte("the-right-token"))
	tokens := filepath.Join(dir, "tokens")
	must(os.WriteFile(tokens, []byte("admin administrator acme "+hex.EncodeToString(sum[:])+"\n"), 0o600))
	c := startChild(t, "flooded", []string{"ODUFLOW_AUTH_TOKENS=" + tokens, "ODUFLOW_SALT_MASTER=" + sim.Addr(),
		"ODUFLOW_SALT_EVENTS=" + sim.EventsAddr(), "ODUFLOW_SALT_KEY_FILE=" + sim.KeyFile(), "ODUFLOW_SALT_PKI_DIR=" + sim.PKIDir(),
		"ODUFLOW_STATE_DIR=" + filepath.Join(dir, "claims"), "ODUFLOW_DRAIN_TIMEOUT=1s", "ODUFLOW_LOG_FORMAT=json", childNoFile + "=256"})
	t0 := time.Now()

	// 400 slow connections from 127.0.0.2: half a request header each, held open.
	const slow = 400
	var held []net.Conn
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	for range slow {
		h, err := d.Dial("tcp", c.addr)
		if err != nil {
			t.Fatalf("slow connection: %v", err)
		}
		_, _ = h.Write([]byte("GET /v1/unresolved HTTP/1.1\r\nHost: x\r\n"))
		held = append(held, h)
	}

	// 40,000 wrong-token requests from 127.0.0.3 over 32 connections, while probes from 127.0.0.1 run.
	const bad, workers = 40000, 32
	var next, answered, unauthorized, limited atomic.Int64
	// The probes run while the flood does, paced by its progress (not by a clock): a round each time
	// another 1/probeRounds of it has been answered, until it ends.
	const probeRounds = 14
	progress, floodDone := make(chan struct{}, probeRounds), make(chan struct{})
	flood := dialFrom("127.0.0.3", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= bad {
				req, _ := http.NewRequest("GET", "http://"+c.addr+"/v1/unresolved", nil)
				req.Header.Set("Authorization", "Bearer wrong")
				resp, err := flood.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if answered.Add(1)%(bad/probeRounds) == 0 {
					select { // one probe round per 1/probeRounds of the flood answered
					case progress <- struct{}{}:
					default:
					}
				}
				switch resp.StatusCode {
				case http.StatusUnauthorized:
					unauthorized.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(floodDone) }()
	probe := dialFrom("127.0.0.1", 2)
	var probes, probesOK int
	for flooding := true; flooding; {
		select {
		case <-progress:
		case <-floodDone:
			flooding = false
		}
		for _, path := range []string{"/readyz", "/healthz"} {
			probes++
			resp, err := probe.Get("http://" + c.addr + path)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					probesOK++
				}
			}
		}
	}
	if probes < probeRounds {
		t.Fatalf("%d probes during the flood, want a round at least every 1/%d of it", probes, probeRounds)
	}
	floodTook := time.Since(t0)
	// The probes again, with the slow connections still held.
	for _, path := range []string{"/readyz", "/healthz"} {
		probes++
		if resp, err := probe.Get("http://" + c.addr + path); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				probesOK++
			}
		}
	}
	if code := c.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var auditLines, counted, connRefused int64
	var emfile int
	sc := bufio.NewScanner(strings.NewReader(c.log()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "too many open files") {
			emfile++
		}
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) != nil || v["audit"] != true {
			continue
		}
		auditLines++
		if v["action"] == "refusals" {
			n, _ := v["count"].(float64)
			switch v["reason"] {
			case "unauthenticated", "unauthenticated_rate":
				counted += int64(n)
			case "connection_limit":
				connRefused += int64(n)
			}
		}
	}
	t.Logf("flood: %d requests answered in %v (%d 401, %d 429), %d of %d probes 200, %d audit lines counting %d refusals, %d connections refused at accept, %d EMFILE",
		answered.Load(), floodTook.Round(time.Millisecond), unauthorized.Load(), limited.Load(), probesOK, probes, auditLines, counted, connRefused, emfile)
	if probesOK != probes {
		t.Fatalf("%d of %d /readyz and /healthz answered 200", probesOK, probes)
	}
	if answered.Load() < bad*9/10 || counted != unauthorized.Load()+limited.Load() {
		t.Fatalf("answered %d of %d, counted %d refusals of %d", answered.Load(), bad, counted, unauthorized.Load()+limited.Load())
	}
	if auditLines > 20 || emfile > 0 {
		t.Fatalf("%d audit lines, %d EMFILE", auditLines, emfile)
	}
	if connRefused < slow-100 {
		t.Fatalf("%d slow connections refused at accept, want most of %d", connRefused, slow)
	}
	if floodTook > 45*time.Second {
		t.Fatalf("the flood took %v", floodTook)
	}
}
