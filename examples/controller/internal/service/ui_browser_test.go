package service_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/profiles"
)

// The console in a real browser: Debian's chromium, headless, driven by chromedp against the controller
// on the Salt master simulator with fake minions. Each page it visits is written as a screenshot to
// $ODUFLOW_SCREENSHOTS when set (docs/screenshots/ in the repository:
// ODUFLOW_SCREENSHOTS=$PWD/docs/screenshots go test ./examples/controller/internal/service -run TestConsoleInBrowser).

// chromiumPath is the browser, or "" (the test skips, except under CI=true where it fails).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (.ci/run installs it)")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium): the browser test needs it")
	return ""
}

// browser is one headless chromium; tab runs actions in its one tab within a deadline.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

func newBrowser(t *testing.T) *browser {
	path := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in a container
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", "new"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx, shots: os.Getenv("ODUFLOW_SCREENSHOTS")}
}

func (b *browser) run(actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var loc string
		lctx, lcancel := context.WithTimeout(b.ctx, time.Second)
		_ = chromedp.Run(lctx, chromedp.Location(&loc))
		lcancel()
		b.t.Fatalf("browser at %s: %v", loc, err)
	}
}

// shot writes a screenshot of the page as name.png under $ODUFLOW_SCREENSHOTS (nothing when unset).
func (b *browser) shot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	var png []byte
	b.run(chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(b.shots, "console-"+name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.run(chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

// await waits until the document (after a navigation a click started) has an element matching sel. The
// page itself waits (a promise resolved by a MutationObserver and readystatechange, no polling); an
// evaluation that meets the old document going away (its context destroyed by the navigation) is sent
// again to the new one.
func (b *browser) await(sel string) {
	b.t.Helper()
	js := fmt.Sprintf(`new Promise(resolve => {
		const ok = () => document.readyState === "complete" && document.querySelector(%q) !== null;
		if (ok()) { resolve(true); return; }
		const check = () => { if (ok()) { obs.disconnect(); resolve(true); } };
		const obs = new MutationObserver(check);
		obs.observe(document, {childList: true, subtree: true});
		document.addEventListener("readystatechange", check);
	})`, sel)
	awaitPromise := func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		var ok bool
		if err = chromedp.Run(ctx, chromedp.Evaluate(js, &ok, awaitPromise)); err == nil && ok {
			return
		}
	}
	var loc string
	lctx, lcancel := context.WithTimeout(b.ctx, time.Second)
	_ = chromedp.Run(lctx, chromedp.Location(&loc))
	lcancel()
	b.t.Fatalf("browser at %s: no %s (%v)", loc, sel, err)
}

// count is how many elements match sel.
func (b *browser) count(sel string) int {
	b.t.Helper()
	var n int
	b.run(chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n))
	return n
}

// waitText waits until sel's text is want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	b.run(chromedp.Poll(fmt.Sprintf(`(document.querySelector(%q)||{}).textContent === %q`, sel, want), nil,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
}

// post sends a form POST from the page's own session (fetch, same origin) and returns its status.
func (b *browser) post(path, form string) int {
	b.t.Helper()
	var code int
	b.run(chromedp.Evaluate(fmt.Sprintf(`fetch(%q, {method: "POST", credentials: "same-origin", redirect: "manual",
		headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: %q}).then(r => r.status)`, path, form), &code,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	return code
}

// requestsOf lists the client's requests in the claim store (fixed and custom profiles).
func requestsOf(t *testing.T, env *simEnv, minion string) []string {
	t.Helper()
	dir, err := env.settings().ClaimDir()
	if err != nil {
		t.Fatal(err)
	}
	st, err := oduflowenv.OpenFileClaims(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := st.ListByClient(context.Background(), minion)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Profile)+":"+c.RequestID)
	}
	return out
}

// setEditor replaces the editor's text (CodeMirror) by typing it as one insertion.
func (b *browser) setEditor(src string) {
	b.t.Helper()
	b.run(chromedp.Click(".cm-content", chromedp.ByQuery),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(input.ModifierCtrl)),
		chromedp.KeyEvent("\b"),
		// Pasted, as an operator pastes a file (typed text would be indented again by the editor).
		chromedp.Evaluate(fmt.Sprintf(`(() => { const dt = new DataTransfer(); dt.setData("text/plain", %q);
			document.querySelector(".cm-content").dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true})); })()`, src), nil))
}

// TestConsoleInBrowser walks the console as its operators do: sign in; 10,000 clients listed and filtered
// on the server; start configure after the confirmation, a double click starting one request, its
// status reaching succeeded live (no reload); a POST without the CSRF token refused; a custom state
// whose syntax error shows at its line, then validated, created, assigned, applied, applied again; the
// unresolved page; an observer who sees no source and no button, and whose forged POST is 403.
func TestConsoleInBrowser(t *testing.T) {
	// Not parallel: it bounds page times (under a second for 10,000 clients) in a chromium it starts.
	if testing.Short() {
		t.Skip("-short: the browser test starts chromium")
	}
	env := startSim(t)
	m := env.addMinion(fakeminion.WithHold())
	// 10,000 clients: the simulator's minion and 9,999 more of acme and globex.
	many := func(c *service.Config) {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s acme\n", m.ID())
		for i := range 9999 {
			company := "acme"
			if i%3 == 0 {
				company = "globex"
			}
			fmt.Fprintf(&sb, "client-%s %s\n", uuid.NewString(), company)
		}
		if err := os.WriteFile(c.Auth.ClientsFile, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := env.server(many)
	t0 := time.Now()
	b := newBrowser(t)
	base := s.http.URL

	// Sign in.
	b.run(chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("#token", chromedp.ByID))
	b.shot("login")
	b.run(chromedp.SendKeys("#token", "wrong", chromedp.ByID), chromedp.Click("#signin", chromedp.ByID))
	b.await("#login-error")
	b.run(chromedp.SendKeys("#token", s.tokens[rootAdmin], chromedp.ByID), chromedp.Click("#signin", chromedp.ByID))
	b.await("#clients")
	if got := b.text("#total"); got != "10000" {
		t.Fatalf("clients: %s, want 10000", got)
	}
	b.shot("clients")

	// 10,000 clients: a page and a filter, each under a second (the best of three tries: a loaded CI
	// machine schedules chromium late now and then).
	q := m.ID()[7:20]
	listTook, filterTook := time.Hour, time.Hour
	for range 3 {
		t1 := time.Now()
		b.run(chromedp.Navigate(base+"/ui/clients?page=100"), chromedp.WaitVisible("#clients", chromedp.ByID))
		listTook = min(listTook, time.Since(t1))
		if got := b.text("#page"); got != "100" {
			t.Fatalf("page %s", got)
		}
		t2 := time.Now()
		b.run(chromedp.Navigate(base+"/ui/clients?q="+q), chromedp.WaitVisible("#clients", chromedp.ByID))
		filterTook = min(filterTook, time.Since(t2))
		if got := b.text("#total"); got != "1" {
			t.Fatalf("filtered: %s clients, want 1", got)
		}
		if listTook < time.Second && filterTook < time.Second {
			break
		}
	}
	// The same filter through the form.
	b.run(chromedp.Navigate(base+"/ui/clients"), chromedp.WaitVisible("#q", chromedp.ByID))
	b.run(chromedp.SendKeys("#q", q, chromedp.ByID), chromedp.Click("#filter", chromedp.ByID))
	b.await(`#clients[data-q="` + q + `"]`)
	if got := b.text("#total"); got != "1" {
		t.Fatalf("filtered: %s clients, want 1", got)
	}
	b.shot("clients-filtered")
	t.Logf("10,000 clients: a page in %v, a filter in %v", listTook, filterTook)
	if listTook > time.Second || filterTook > time.Second {
		t.Fatalf("10,000 clients: a page in %v, a filter in %v: want under a second", listTook, filterTook)
	}

	// A client: readiness, start configure after the confirmation.
	b.run(chromedp.Navigate(base+"/ui/clients/"+m.ID()), chromedp.WaitVisible("#readiness", chromedp.ByID))
	if got := b.text("#readiness"); !strings.HasPrefix(got, "ready") {
		t.Fatalf("readiness %q", got)
	}
	b.run(chromedp.Click("#start-configure", chromedp.ByID))
	b.await("#confirm")
	if got := b.text("#confirm-text"); !strings.Contains(got, "configure") || !strings.Contains(got, m.ID()) {
		t.Fatalf("the confirmation does not name the client and the profile: %q", got)
	}
	request := b.text("#request-id")
	b.shot("confirm")
	// A POST without the CSRF token: 403, nothing started.
	if code := b.post("/ui/clients/"+m.ID()+"/start/configure", "request_id="+request); code != http.StatusForbidden {
		t.Fatalf("a POST without the CSRF token: %d, want 403", code)
	}
	if n := len(requestsOf(t, env, m.ID())); n != 0 {
		t.Fatalf("a refused POST started %d requests", n)
	}
	// A double click: one request.
	b.run(chromedp.DoubleClick("#confirm", chromedp.ByID))
	b.await("#status")
	b.run(chromedp.Reload(), chromedp.WaitVisible("#status", chromedp.ByID))
	// The confirmation submitted once more (a retry after a timeout): the same request id, answered from
	// its claim (a redirect to the same status page), nothing started.
	var csrf0 string
	b.run(chromedp.AttributeValue(`meta[name="csrf-token"]`, "content", &csrf0, nil, chromedp.ByQuery))
	if code := b.post("/ui/clients/"+m.ID()+"/start/configure", "csrf="+csrf0+"&request_id="+request); code != 0 { // 0: the redirect, unfollowed
		t.Fatalf("the confirmation again: %d, want the redirect to its status page", code)
	}
	if got := b.text("#request-id"); got != request {
		t.Fatalf("status page of %q, want the confirmation's %q", got, request)
	}
	// The live status: the run is held, then released; the page reaches succeeded without a reload.
	b.waitText("#stream-state", "live")
	b.shot("request-running")
	// Meanwhile, in a second tab of the same session: the running request on the unresolved page, with
	// what it needs, and no reconcile button.
	tab := &browser{t: t, shots: b.shots}
	var cancelTab context.CancelFunc
	tab.ctx, cancelTab = chromedp.NewContext(b.ctx)
	if err := chromedp.Run(tab.ctx); err != nil { // opened here: a Run with a deadline would close it after
		t.Fatal(err)
	}
	tab.run(chromedp.Navigate(base+"/ui/unresolved"), chromedp.WaitVisible("#unresolved", chromedp.ByID))
	if row := tab.text("#unresolved tbody"); !strings.Contains(row, "running") || tab.count("main button") != 0 {
		t.Fatalf("unresolved page while the request runs: %q", row)
	}
	tab.shot("unresolved")
	cancelTab()
	m.Release()
	b.waitText("#status", "succeeded")
	b.shot("request-succeeded")
	if got := requestsOf(t, env, m.ID()); len(got) != 1 {
		t.Fatalf("a double click and a reload: requests %v, want 1", got)
	}
	if runs := m.Calls("oduflow_job.run"); runs != 1 {
		t.Fatalf("%d runs, want 1", runs)
	}
	b.run(chromedp.Navigate(base+"/ui/clients/"+m.ID()), chromedp.WaitVisible("#history", chromedp.ByID))
	b.shot("client")

	// A custom state: a syntax error at its line, then validate, create, assign, Apply, Apply Again.
	broken := "motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: [unclosed\n"
	_, cerr := profiles.CompileCustom([]byte(broken))
	var ce *profiles.CustomError
	if !errors.As(cerr, &ce) {
		t.Fatalf("the broken source compiles: %v", cerr)
	}
	b.run(chromedp.Navigate(base+"/ui/custom-states/new"), chromedp.WaitVisible(".cm-content", chromedp.ByQuery))
	b.setEditor(broken)
	b.run(chromedp.Click("#validate", chromedp.ByID))
	b.run(chromedp.WaitVisible("#validate-result.err", chromedp.ByQuery), chromedp.WaitVisible(".cm-lintRange-error", chromedp.ByQuery))
	var line string
	b.run(chromedp.AttributeValue("#validate-result", "data-line", &line, nil, chromedp.ByID))
	if line != fmt.Sprint(ce.Line) || !strings.Contains(b.text("#validate-result"), fmt.Sprintf("line %d, column %d", ce.Line, ce.Column)) {
		t.Fatalf("the error shows at %q (%q), want line %d column %d", line, b.text("#validate-result"), ce.Line, ce.Column)
	}
	if b.count(".cm-lint-marker-error") != 1 {
		t.Fatal("no error marker in the editor's gutter")
	}
	b.shot("editor-error")
	b.setEditor(motd)
	b.run(chromedp.Click("#validate", chromedp.ByID), chromedp.WaitVisible("#validate-result.ok", chromedp.ByQuery))
	b.run(chromedp.SendKeys("#company", "acme", chromedp.ByID), chromedp.SendKeys("#name", "motd", chromedp.ByID),
		chromedp.Click("#save", chromedp.ByID))
	b.await("#revisions")
	b.run(chromedp.SendKeys("#assign-minion", m.ID(), chromedp.ByID), chromedp.Click("#assign", chromedp.ByID))
	b.await("#assignments")
	var defID string
	b.run(chromedp.Evaluate(`document.querySelector("#assignments button.apply").id.slice(6)`, &defID))
	b.run(chromedp.Click("#apply-"+defID, chromedp.ByID))
	b.await("#status")
	b.waitText("#status", "succeeded")
	first := b.text("#request-id")
	b.shot("execution")
	b.run(chromedp.Navigate(base+"/ui/clients/"+m.ID()), chromedp.WaitVisible("#assignments", chromedp.ByID),
		chromedp.Click("#apply-"+defID, chromedp.ByID))
	b.await("#reused")
	if got := b.text("#status"); got != "succeeded" {
		t.Fatalf("Apply after a success: %q (%s), want the succeeded execution reused", got, b.text("#reused"))
	}
	b.run(chromedp.Navigate(base+"/ui/clients/"+m.ID()), chromedp.WaitVisible("#assignments", chromedp.ByID),
		chromedp.Click("#again-"+defID, chromedp.ByID))
	b.await("#status")
	b.waitText("#status", "succeeded")
	if got := b.text("#execution-id"); got == first {
		t.Fatal("Apply Again reused the execution")
	}
	b.run(chromedp.Navigate(base+"/ui/clients/"+m.ID()), chromedp.WaitVisible("#executions", chromedp.ByID))
	if n := b.count("#executions tbody tr"); n != 2 {
		t.Fatalf("%d executions, want 2 (Apply, Apply Again)", n)
	}
	b.run(chromedp.Navigate(base+"/ui/custom-states/"+defID), chromedp.WaitVisible("#revisions", chromedp.ByID))
	b.shot("custom-state")
	b.run(chromedp.Navigate(base+"/ui/custom-states"), chromedp.WaitVisible("#definitions", chromedp.ByID))
	b.shot("custom-states")

	// Sign out; an observer signs in: the same pages, no source, no button; a forged POST is 403.
	b.run(chromedp.Click("#logout", chromedp.ByID))
	b.await("#token")
	b.run(chromedp.Navigate(base+"/ui/clients"), chromedp.WaitVisible("#token", chromedp.ByID)) // revoked
	b.run(chromedp.SendKeys("#token", s.tokens[observer], chromedp.ByID), chromedp.Click("#signin", chromedp.ByID))
	b.await("#clients")
	if got := b.text("#role"); got != "observer" {
		t.Fatalf("role %q", got)
	}
	actionable := `main button:not(#reconnect), main .button, main form[method=post], #source, .cm-editor` // #reconnect only reopens the event stream (a GET)
	for _, page := range []string{"/ui/clients/" + m.ID(), "/ui/custom-states/" + defID, "/ui/custom-states", "/ui/clients/" + m.ID() + "/executions/" + first} {
		b.run(chromedp.Navigate(base+page), chromedp.WaitVisible("main h1", chromedp.ByQuery))
		if n := b.count(actionable); n != 0 {
			t.Fatalf("observer on %s: %d buttons, forms or editors", page, n)
		}
	}
	b.run(chromedp.Navigate(base+"/ui/custom-states/"+defID), chromedp.WaitVisible("#no-source", chromedp.ByID))
	var html string
	b.run(chromedp.OuterHTML("html", &html, chromedp.ByQuery))
	if strings.Contains(html, "/etc/motd") {
		t.Fatal("the observer's page carries the source")
	}
	b.shot("observer-custom-state")
	b.run(chromedp.Navigate(base+"/ui/clients/"+m.ID()), chromedp.WaitVisible("#history", chromedp.ByID))
	b.shot("observer-client")
	var csrf string
	b.run(chromedp.AttributeValue(`meta[name="csrf-token"]`, "content", &csrf, nil, chromedp.ByQuery))
	forged := "csrf=" + csrf + "&request_id=" + uuid.NewString()
	if code := b.post("/ui/clients/"+m.ID()+"/start/configure", forged); code != http.StatusForbidden {
		t.Fatalf("an observer's forged start: %d, want 403", code)
	}
	if code := b.post("/ui/clients/"+m.ID()+"/custom-states/"+defID+"/apply", forged+"&again=1"); code != http.StatusForbidden {
		t.Fatalf("an observer's forged apply: %d, want 403", code)
	}
	if got := requestsOf(t, env, m.ID()); len(got) != 3 {
		t.Fatalf("requests after the forged POSTs: %v, want 3 (configure, Apply, Apply Again)", got)
	}
	t.Logf("browser test: %v", time.Since(t0))
}
