package service_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// The service on the Salt master simulator with one fake minion: start a configure apply over HTTP, then
// read its status until it is final. A real deployment sets the same Settings from ODUFLOW_* (main.go).
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "controller-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	_ = os.Mkdir(filepath.Join(dir, "master"), 0o700)
	sim, err := salttest.Start(ctx, salttest.WithDir(filepath.Join(dir, "master")))
	if err != nil {
		panic(err)
	}
	defer sim.Close()
	minion := fakeminion.NewModel("client-7c9e6679-7425-40de-944b-e07fc1f90ae7",
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}))
	if err := fakeminion.Add(sim, minion); err != nil {
		panic(err)
	}

	// One administrator of company acme (the token file holds the SHA-256 of its token, mode 0600), and
	// the client bound to acme.
	const token = "example-token-not-a-secret"
	sum := sha256.Sum256([]byte(token))
	if err := os.WriteFile(filepath.Join(dir, "tokens"), []byte("alice administrator acme "+hex.EncodeToString(sum[:])+"\n"), 0o600); err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clients"), []byte(minion.ID()+" acme\n"), 0o644); err != nil {
		panic(err)
	}
	svc, err := service.Open(ctx, service.Config{Settings: oduflowenv.Settings{Master: sim.Addr(), Events: sim.EventsAddr(),
		KeyFile: sim.KeyFile(), PKIDir: sim.PKIDir(), StateDir: filepath.Join(dir, "claims")},
		Auth: service.AuthConfig{TokensFile: filepath.Join(dir, "tokens"), ClientsFile: filepath.Join(dir, "clients")}})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(svc.Handler())
	defer func() {
		srv.Close()
		_ = svc.Close(ctx)
	}()

	const request = "3f2a7c4e-9b1d-4e8a-a6f0-1c2d3e4f5a6b"
	url := srv.URL + "/v1/requests/configure/" + minion.ID()
	do := func(method, url, body string) *http.Response {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	resp := do("POST", url, `{"request_id":"`+request+`"}`)
	resp.Body.Close()
	fmt.Println("start:", resp.StatusCode)

	// The status as server-sent events: one "status" event now and one per change; the stream ends
	// after the final one (no polling).
	events := do("GET", url+"/"+request+"/events", "")
	defer events.Body.Close()
	var last oduflow.Response
	sc := bufio.NewScanner(events.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			_ = json.Unmarshal([]byte(data), &last)
		}
	}
	fmt.Println("status:", last.Status, last.Passed, "of", last.Total)
	// Output:
	// start: 201
	// status: succeeded 3 of 3
}
