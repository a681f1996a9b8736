package oduflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Live custom states against a real salt-master with the oduflow_job module synced to the minion
// (the lab of /work/shared/lab: `eval "$(bash saltlab.sh env)"`). Each source is applied through
// CustomStart (oduflow_job.run with profile custom, state.high on the minion) and, as the reference, placed
// in the lab's file roots and applied with Salt's own `salt <minion> state.apply <name>`; status and
// counts must agree. ODUFLOW_SALTLAB_DIR (what `saltlab.sh env` prints), else SALTLAB_DIR, else /srv/saltlab
// locates the file roots and the salt CLI; its master must be the one ODUFLOW_SALT_MASTER names.

var cstLiveSources = map[string]string{
	"succeed": `first:
  test.succeed_without_changes:
    - name: first
second:
  test.succeed_with_changes:
    - name: second
    - require:
      - test: first
marker:
  file.managed:
    - name: {{OUT}}/oduflow-custom-live.txt
    - contents: custom state applied
    - require:
      - test: second
`,
	"fail": `will_fail:
  test.fail_without_changes:
    - name: deliberate failure
after_fail:
  test.succeed_without_changes:
    - onfail:
      - test: will_fail
needs_success:
  test.succeed_without_changes:
    - require:
      - test: will_fail
`,
	"requisites": `changed:
  test.succeed_with_changes:
    - name: changed
on_change:
  test.succeed_without_changes:
    - onchanges:
      - test: changed
watcher:
  test.succeed_without_changes:
    - watch:
      - test: changed
never:
  test.succeed_without_changes:
    - onfail:
      - test: changed
ordered_first:
  test.nop:
    - order: 1
`,
}

func cstLiveEnv(t *testing.T) (master, events, minion string, auth salt.Auth) {
	t.Helper()
	master, events, minion = os.Getenv("ODUFLOW_SALT_MASTER"), os.Getenv("ODUFLOW_SALT_EVENTS"), os.Getenv("ODUFLOW_SALT_MINION")
	if master == "" || events == "" || minion == "" {
		t.Skip("live custom test: set ODUFLOW_SALT_MASTER, ODUFLOW_SALT_EVENTS, ODUFLOW_SALT_MINION and " +
			"ODUFLOW_SALT_KEY_FILE or ODUFLOW_SALT_EAUTH/USER/PASSWORD (eval \"$(bash saltlab.sh env)\")")
	}
	if kf := os.Getenv("ODUFLOW_SALT_KEY_FILE"); kf != "" {
		if f, err := os.Open(kf); err == nil {
			_ = f.Close()
			return master, events, minion, salt.UserKey("root", kf)
		}
	}
	if b := os.Getenv("ODUFLOW_SALT_EAUTH"); b != "" {
		return master, events, minion, salt.Eauth(b, os.Getenv("ODUFLOW_SALT_USER"), os.Getenv("ODUFLOW_SALT_PASSWORD"))
	}
	t.Skip("live custom test: no readable ODUFLOW_SALT_KEY_FILE and no ODUFLOW_SALT_EAUTH")
	return
}

// cstLabDir is the lab whose file roots and salt CLI the reference run uses: ODUFLOW_SALTLAB_DIR, else
// SALTLAB_DIR, else /srv/saltlab. Several labs run side by side on one machine (their own ports), so the
// lab's master config must name the ret_port of master (ODUFLOW_SALT_MASTER, tcp://host:port; Salt's
// default 4506 when the config sets none): otherwise the reference would write states into, and apply
// them through, another lab's master.
func cstLabDir(master string) (string, error) {
	lab := os.Getenv("ODUFLOW_SALTLAB_DIR")
	if lab == "" {
		lab = os.Getenv("SALTLAB_DIR")
	}
	if lab == "" {
		lab = "/srv/saltlab"
	}
	_, port, ok := strings.Cut(strings.TrimPrefix(master, "tcp://"), ":")
	if !ok {
		return "", fmt.Errorf("ODUFLOW_SALT_MASTER %q has no port", master)
	}
	conf, err := os.ReadFile(filepath.Join(lab, "etc", "master"))
	if err != nil {
		return "", fmt.Errorf("lab %s: %w", lab, err)
	}
	ret := "4506"
	for _, line := range strings.Split(string(conf), "\n") {
		if v, ok := strings.CutPrefix(line, "ret_port:"); ok {
			ret = strings.TrimSpace(v)
		}
	}
	if ret != port {
		return "", fmt.Errorf("lab %s's master listens on ret_port %s, not on %s's port (set ODUFLOW_SALTLAB_DIR)", lab, ret, master)
	}
	return lab, nil
}

func TestLiveCustomMatchesStateApply(t *testing.T) {
	master, events, minion, auth := cstLiveEnv(t)
	lab, err := cstLabDir(master)
	if err != nil {
		t.Skipf("live custom test: %v", err)
	}
	saltCLI := filepath.Join(lab, "bin", "salt")
	if _, err := os.Stat(saltCLI); err != nil {
		t.Skipf("live custom test: no salt CLI at %s (set SALTLAB_DIR)", saltCLI)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	client, err := salt.NewClient(master, salt.WithAuth(auth), salt.WithRequestTimeout(30*time.Second),
		salt.WithLogger(cstLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	base := t.TempDir()
	cat, err := catalog.Open(filepath.Join(base, "catalog"), catalog.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	timers := DefaultTimers()
	timers.ExecutionWait, timers.HardDeadline, timers.StatusExpiry = 3*time.Minute, 4*time.Minute, 5*time.Minute
	timers.PollBudget, timers.CallTimeout = 30, 20*time.Second
	d, err := New(client, SaltEvents(events), WithClaimDir(filepath.Join(base, "claims")), WithTimers(timers), WithPKIDir(labPKIDir()),
		WithLogger(cstLogger()), WithCustomCatalog(cat))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(closedContext()) }()
	liveWait := func(get func() (receipt.Status, error)) receipt.Status {
		t.Helper()
		for {
			st, err := get()
			if err != nil {
				t.Fatal(err)
			}
			if st != receipt.StatusRunning && st != receipt.StatusNotStarted {
				return st
			}
			select {
			case <-ctx.Done():
				t.Fatal("timeout")
			case <-time.After(250 * time.Millisecond):
			}
		}
	}

	// Initial configuration in this (fresh) claim directory: roles.client_stack, all true on the lab.
	cfg := receipt.NewRequestID()
	if _, err := d.Start(ctx, minion, cfg, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	if st := liveWait(func() (receipt.Status, error) {
		r, err := d.Status(ctx, minion, cfg, receipt.ProfileConfigure)
		return r.Status, err
	}); st != receipt.StatusSucceeded {
		t.Fatalf("initial configuration: %s", st)
	}

	for _, name := range []string{"succeed", "fail", "requisites"} {
		t.Run(name, func(t *testing.T) {
			src := strings.ReplaceAll(cstLiveSources[name], "{{OUT}}", filepath.Join(lab, "out"))
			def, err := cat.CreateDefinition(ctx, "lab", name, []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cat.Assign(ctx, def.ID, minion, "lab"); err != nil {
				t.Fatal(err)
			}
			var got CustomResponse
			mode := catalog.ModeApply
			for attempt := 0; attempt < 4; attempt++ {
				req := receipt.NewRequestID()
				if _, err := d.CustomStart(ctx, minion, req, def.ID, mode); err != nil {
					t.Fatal(err)
				}
				liveWait(func() (receipt.Status, error) {
					r, err := d.CustomStatus(ctx, minion, req)
					got = r
					return r.Status, err
				})
				if !(got.Status == receipt.StatusFailed && got.Passed == 0 && got.Total == 1) {
					break
				}
				// 0/1: the minion's execution lock was busy (another test on the shared lab): apply again.
				mode = catalog.ModeApplyAgain
				// the shared lab's execution lock is busy: back off before applying again (live test only)
				time.Sleep(3 * time.Second)
			}
			want := cstLiveStateApply(ctx, t, saltCLI, lab, minion, name, src)
			t.Logf("%s: CustomStart %s %d/%d, state.apply %s %d/%d", name, got.Status, got.Passed, got.Total,
				want.Status, want.Passed, want.Total)
			if got.Status != want.Status || got.Passed != want.Passed || got.Total != want.Total {
				t.Fatalf("custom %s %d/%d, state.apply %s %d/%d", got.Status, got.Passed, got.Total,
					want.Status, want.Passed, want.Total)
			}
			// Apply once more: an identical success is reused without publishing; a failure confirmed by
			// its minion receipt allows a new execution.
			again := receipt.NewRequestID()
			r, err := d.CustomStart(ctx, minion, again, def.ID, catalog.ModeApply)
			if err != nil {
				t.Fatal(err)
			}
			switch got.Status {
			case receipt.StatusSucceeded:
				if r.Reused != reuseSucceeded || r.ExecutionID != got.ExecutionID || r.Total != got.Total {
					t.Fatalf("no reuse of the success: %+v", r)
				}
			case receipt.StatusFailed:
				if r.Reused != "" || r.ExecutionID != again {
					t.Fatalf("failure confirmed by receipt should allow a new run: %+v", r)
				}
				liveWait(func() (receipt.Status, error) {
					r2, err := d.CustomStatus(ctx, minion, again)
					return r2.Status, err
				})
			}
		})
	}
}

// cstLiveStateApply places src in the lab's file roots as oduflow_custom_live_<name>.sls, applies it with
// Salt's own CLI and reduces the return like a minion receipt.
func cstLiveStateApply(ctx context.Context, t *testing.T, saltCLI, lab, minion, name, src string) receipt.Summary {
	t.Helper()
	sls := "oduflow_custom_live_" + name
	path := filepath.Join(lab, "salt", sls+".sls")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Remove(path) }()
	for attempt := 0; ; attempt++ {
		cmd := exec.CommandContext(ctx, saltCLI, minion, "state.apply", sls, "--out=json", "--static", "-t", "120")
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		_ = cmd.Run() // retcode 2 for a failed state; the output decides
		var out map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("state.apply output is not JSON (%v)", err)
		}
		ret := out[minion]
		if _, isMap := ret.(map[string]any); isMap || attempt >= 5 {
			return receipt.Reduce(ret)
		}
		// A list: "The function state.apply is running as PID ..." (another run on the shared lab).
		time.Sleep(3 * time.Second)
	}
}

// TestCstLabDir: the live custom test's reference run must use the lab of ODUFLOW_SALT_MASTER. With two
// labs side by side (the 3008 lab on ret port 5306, another on 6306 in SALTLAB_DIR), it picks
// ODUFLOW_SALTLAB_DIR, and refuses a lab whose master listens elsewhere. Before, it read SALTLAB_DIR
// (default /srv/saltlab), which `saltlab.sh env` does not set: on a release lab it wrote its states into
// the default lab's file roots and applied them through that lab's master, and hung there.
func TestCstLabDir(t *testing.T) {
	labs := map[string]string{}
	for name, conf := range map[string]string{"3008": "publish_port: 5305\nret_port: 5306\n", "other": "ret_port: 6306\n", "default": "interface: 127.0.0.1\n"} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "etc", "master"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		labs[name] = dir
	}
	t.Setenv("SALTLAB_DIR", labs["other"])
	t.Setenv("ODUFLOW_SALTLAB_DIR", labs["3008"])
	if got, err := cstLabDir("tcp://127.0.0.1:5306"); err != nil || got != labs["3008"] {
		t.Fatalf("ODUFLOW_SALTLAB_DIR: %q %v", got, err)
	}
	t.Setenv("ODUFLOW_SALTLAB_DIR", "")
	if got, err := cstLabDir("tcp://127.0.0.1:5306"); err == nil {
		t.Fatalf("another lab's master accepted: %q", got)
	}
	t.Setenv("SALTLAB_DIR", labs["default"])
	if got, err := cstLabDir("tcp://127.0.0.1:4506"); err != nil || got != labs["default"] {
		t.Fatalf("Salt's default ret_port: %q %v", got, err)
	}
}
