package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

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

	svc, err := service.Open(ctx, service.Config{Settings: oduflowenv.Settings{Master: sim.Addr(), Events: sim.EventsAddr(),
		KeyFile: sim.KeyFile(), PKIDir: sim.PKIDir(), StateDir: filepath.Join(dir, "claims")}})
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
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"request_id":"`+request+`"}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("start:", resp.StatusCode)

	for {
		resp, err := http.Get(url + "/" + request)
		if err != nil {
			panic(err)
		}
		var r oduflow.Response
		_ = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if r.Status.Terminal() {
			fmt.Println("status:", r.Status, r.Passed, "of", r.Total)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// start: 201
	// status: succeeded 3 of 3
}
