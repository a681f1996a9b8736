package service

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// The operator console at /ui/: server-rendered pages (html/template) over the same handlers as the
// JSON API, so that every action is authorized, bounded and audited exactly as the API's. Its assets
// are embedded; the Content-Security-Policy allows scripts and styles from the console only (no inline
// script). A browser signs in with a bearer token (POST /ui/login, field token) and gets a session
// cookie, or presents a client certificate (mTLS) and needs no sign-in. Every POST carries a CSRF
// token. See README.md (The console).

//go:embed ui/templates/*.html ui/static/*.css ui/static/*.js ui/static/editor.js.sha256
var uiFiles embed.FS

const (
	// uiSessionTTL bounds a session from its sign-in; uiSessionIdle ends one unused that long.
	uiSessionTTL  = 8 * time.Hour
	uiSessionIdle = time.Hour
	// uiMaxSessions bounds the session table (the oldest goes first).
	uiMaxSessions = 10000
	// uiPageSize is the clients list's page.
	uiPageSize = 50
	// uiCSP is every console answer's Content-Security-Policy: scripts from the console only, never
	// inline; styles from the console and, for the editor's generated style sheet, those carrying the
	// answer's nonce (%s).
	uiCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'nonce-%s'; img-src 'self'; connect-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// uiSession is one signed-in browser.
type uiSession struct {
	principal Principal
	csrf      string
	created   time.Time
	used      time.Time
	tokens    fileStamp // the token file as it was at sign-in: a change revokes the session
}

// fileStamp identifies one version of a file (modification time, size, inode change time).
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

// console is the console's state: the sessions, the templates, the per-process CSRF key of principals
// without a session (client certificates, the insecure mode).
type console struct {
	mu         sync.Mutex
	sessions   map[string]*uiSession
	tokensFile string
	key        [32]byte
	pages      map[string]*template.Template
	static     fs.FS
	now        func() time.Time
	readiness  sync.Map // minion -> uiReadiness: the last readiness the console saw
}

// uiReadiness is the last readiness check of a client made from the console.
type uiReadiness struct {
	Ready  bool
	Reason string
	At     time.Time
}

func newConsole(tokensFile string) *console {
	c := &console{sessions: map[string]*uiSession{}, tokensFile: tokensFile, now: time.Now}
	if _, err := rand.Read(c.key[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	c.static, _ = fs.Sub(uiFiles, "ui/static")
	c.pages = map[string]*template.Template{}
	base := template.Must(template.New("").Funcs(uiFuncs).ParseFS(uiFiles, "ui/templates/base.html"))
	names, _ := fs.Glob(uiFiles, "ui/templates/*.html")
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "ui/templates/"), ".html")
		if name == "base" {
			continue
		}
		c.pages[name] = template.Must(template.Must(base.Clone()).ParseFS(uiFiles, n))
	}
	return c
}

var uiFuncs = template.FuncMap{
	"short": func(s string) string {
		if len(s) > 13 {
			return s[:13] + "…"
		}
		return s
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"add": func(a, b int) int { return a + b },
}

func stamp(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func sessionCookieName(r *http.Request) string {
	if r.TLS != nil {
		return "__Host-oduflow_session"
	}
	return "oduflow_session"
}

// session is the request's live session (nil when none): unexpired, not idle, and signed in with the
// token file as it is now.
func (c *console) session(r *http.Request) (string, *uiSession) {
	ck, err := r.Cookie(sessionCookieName(r))
	if err != nil || ck.Value == "" {
		return "", nil
	}
	now := c.now()
	cur := stamp(c.tokensFile)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[ck.Value]
	if s == nil {
		return "", nil
	}
	if now.Sub(s.created) > uiSessionTTL || now.Sub(s.used) > uiSessionIdle || cur != s.tokens {
		delete(c.sessions, ck.Value)
		return "", nil
	}
	s.used = now
	return ck.Value, s
}

// newSession records a session for p and returns its id.
func (c *console) newSession(p Principal) string {
	id := randomToken()
	now := c.now()
	st := stamp(c.tokensFile)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= uiMaxSessions {
		oldest := ""
		for k, s := range c.sessions {
			if oldest == "" || s.used.Before(c.sessions[oldest].used) {
				oldest = k
			}
		}
		delete(c.sessions, oldest)
	}
	c.sessions[id] = &uiSession{principal: p, csrf: randomToken(), created: now, used: now, tokens: st}
	return id
}

func (c *console) endSession(id string) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}

// csrfFor is the CSRF token of a request's principal: its session's, or a keyed hash of the principal's
// name when it has no session (a client certificate).
func (c *console) csrfFor(p Principal, s *uiSession) string {
	if s != nil {
		return s.csrf
	}
	m := hmac.New(sha256.New, c.key[:])
	m.Write([]byte("csrf\x00" + p.Name))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionPrincipal authenticates a GET by its console session (the pages' event streams and reads).
// Writes never authenticate by cookie on the JSON API: the console's own POST routes check the CSRF
// token first.
func (s *Service) sessionPrincipal(r *http.Request) (Principal, bool) {
	if s.ui == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return Principal{}, false
	}
	_, sess := s.ui.session(r)
	if sess == nil {
		return Principal{}, false
	}
	return sess.principal, true
}

// uiCtx is what a console handler knows of its caller.
type uiCtx struct {
	p    Principal
	sess *uiSession
	csrf string
}

type uiCtxKey struct{}

func uiOf(r *http.Request) uiCtx {
	u, _ := r.Context().Value(uiCtxKey{}).(uiCtx)
	return u
}

// uiHeaders are every console answer's security headers.
func uiHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", fmt.Sprintf(uiCSP, randomToken()[:22]))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// uiRoutes registers the console on mux: its open routes (assets, sign-in, redirects) and the routes of
// its table, behind uiProtect.
func (s *Service) uiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /ui/static/{file}", s.uiStatic)
	mux.HandleFunc("GET /ui/login", s.uiLoginPage)
	mux.HandleFunc("POST /ui/login", s.uiLogin)
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/clients", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/clients", http.StatusSeeOther)
	})
	for _, rt := range s.uiRouteTable() {
		mux.HandleFunc(rt.pattern, s.uiProtect(rt.action, rt.access, rt.handler))
	}
}

// uiRouteTable is the console's route table: each route declares its access as the API's do (an
// administrator's action is one here too), and uiProtect enforces it (authorize) before the page's
// handler runs; the API handlers a page calls are authorized again with their own route's declaration.
func (s *Service) uiRouteTable() []apiRoute {
	return []apiRoute{
		// Sign-out ends the caller's own session: a write with no target of a company.
		{"POST /ui/logout", "ui_logout", access{mutating: true}, s.uiLogout},
		{"GET /ui/clients", "ui_clients", anyReads(scopeListed), s.uiClients},
		{"GET /ui/clients/{minion}", "ui_client", anyReads(scopeMinion), s.uiClient},
		{"GET /ui/clients/{minion}/start/{profile}", "ui_confirm", anyReads(scopeMinion), s.uiConfirm},
		{"POST /ui/clients/{minion}/start/{profile}", "start", adminWrites(scopeMinion), s.uiStart},
		{"GET /ui/clients/{minion}/requests/{profile}/{request_id}", "ui_request", anyReads(scopeMinion), s.uiRequest},
		{"POST /ui/clients/{minion}/requests/{request_id}/resume", "resume", adminWrites(scopeMinion), s.uiResume},
		{"GET /ui/unresolved", "ui_unresolved", anyReads(scopeListed), s.uiUnresolved},
		{"GET /ui/custom-states", "ui_custom_list", anyReads(scopeListed), s.uiCustomList},
		{"GET /ui/custom-states/new", "ui_custom_new", adminReads(scopeNone), s.uiCustomNew},
		{"POST /ui/custom-states", "custom_create", adminWrites(scopeBodyCompany), s.uiCustomCreate},
		{"GET /ui/custom-states/{id}", "ui_custom", anyReads(scopeDefinition), s.uiCustom},
		{"POST /ui/custom-states/{id}/source", "custom_save", adminWrites(scopeDefinition), s.uiCustomSave},
		// The client is a form field: the API's custom_assign (call) checks it (scopeMinion).
		{"POST /ui/custom-states/{id}/assign", "custom_assign", adminWrites(scopeDefinition), s.uiCustomAssign},
		{"POST /ui/api/custom-states/validate", "custom_validate", adminReads(scopeNone), s.validateCustom},
		{"POST /ui/clients/{minion}/custom-states/{id}/apply", "custom_apply", adminWrites(scopeMinion | scopeDefinition), s.uiApply},
		{"GET /ui/clients/{minion}/executions/{request_id}", "ui_execution", anyReads(scopeMinion), s.uiExecution},
	}
}

// uiProtect authenticates a console request (a client certificate or bearer token, else the session
// cookie; none: to the sign-in page, 401), bounds it per principal like protect, and for a POST checks
// the CSRF token (form field csrf or header X-CSRF-Token; 403 otherwise) before anything is read.
func (s *Service) uiProtect(action string, a access, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		uiHeaders(w)
		rec := auditOf(r.Context())
		rec.action, rec.mutating = action, a.mutating
		rec.noteTarget(r)
		if rec.minion != "" {
			rec.company = s.clients[rec.minion]
		}
		p, ok := s.auth.principal(r)
		var sess *uiSession
		if !ok {
			_, sess = s.ui.session(r)
			if sess == nil {
				if r.Method == http.MethodGet {
					http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
					return
				}
				s.refuseUnauthenticated(w, r)
				return
			}
			p = sess.principal
		}
		rec.principal = &p
		u := uiCtx{p: p, sess: sess, csrf: s.ui.csrfFor(p, sess)}
		if r.Method == http.MethodPost {
			got := r.Header.Get("X-CSRF-Token")
			if got == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
				r.Body = http.MaxBytesReader(w, r.Body, MaxCustomBodyBytes)
				got = r.PostFormValue("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(u.csrf)) != 1 {
				s.writeError(w, r, action, http.StatusForbidden, body(action+": refused: missing or wrong CSRF token", exitNothingWritten, "csrf"))
				return
			}
		}
		release, ok := s.limit.acquire(p.Name)
		if !ok {
			w.Header().Set("Retry-After", "1")
			s.writeError(w, r, action, http.StatusTooManyRequests,
				body("too many requests in progress for this principal", exitRetry, "too_many_requests"))
			return
		}
		defer release()
		// The route's declaration, enforced as the API's is; a refusal is rendered as a page.
		r = r.WithContext(context.WithValue(r.Context(), uiCtxKey{}, u))
		rc := &recorder{h: http.Header{}}
		granted, ok := s.authorize(rc, r, action, a, p)
		if !ok {
			s.uiRecorded(w, r, rc)
			return
		}
		h(w, granted)
	}
}

func (s *Service) uiStatic(w http.ResponseWriter, r *http.Request) {
	uiHeaders(w)
	name := r.PathValue("file")
	b, err := fs.ReadFile(s.ui.static, name)
	if err != nil || strings.HasSuffix(name, ".sha256") {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// loginCookie carries the sign-in form's CSRF token (double submit: the form's field must equal it).
const loginCookie = "oduflow_login"

func (s *Service) uiLoginPage(w http.ResponseWriter, r *http.Request) {
	uiHeaders(w)
	s.renderLogin(w, r, http.StatusOK, "")
}

func (s *Service) renderLogin(w http.ResponseWriter, r *http.Request, code int, msg string) {
	tok := randomToken()
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: tok, Path: "/ui/login", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: 600})
	s.render(w, r, code, "login", map[string]any{"Error": msg, "CSRF": tok})
}

// uiLogin signs in with a token of the token file: a session cookie (HttpOnly, SameSite=Strict, Secure
// under TLS, ending with the session). A refused token is counted like any unauthenticated request.
func (s *Service) uiLogin(w http.ResponseWriter, r *http.Request) {
	uiHeaders(w)
	rec := auditOf(r.Context())
	rec.action, rec.mutating = "ui_login", true
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	ck, err := r.Cookie(loginCookie)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		s.writeError(w, r, "ui_login", http.StatusForbidden, body("ui_login: refused: missing or wrong CSRF token", exitNothingWritten, "csrf"))
		return
	}
	p, ok := s.auth.tokens.authenticate(r.PostFormValue("token"))
	if !ok {
		src := hostOf(r.RemoteAddr)
		rec.aggregated = true
		if s.unauth != nil && !s.unauth.allow(src) {
			s.refusals.add(src, "unauthenticated_rate", "", http.StatusTooManyRequests)
			w.Header().Set("Retry-After", "1")
			s.renderLogin(w, r, http.StatusTooManyRequests, "Too many attempts: wait a second.")
			return
		}
		s.refusals.add(src, "unauthenticated", "", http.StatusUnauthorized)
		s.renderLogin(w, r, http.StatusUnauthorized, "Sign-in refused: unknown token.")
		return
	}
	rec.principal = &p
	id := s.ui.newSession(p)
	http.SetCookie(w, &http.Cookie{Name: sessionCookieName(r), Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(uiSessionTTL / time.Second)})
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: "/ui/login", MaxAge: -1})
	http.Redirect(w, r, "/ui/clients", http.StatusSeeOther)
}

func (s *Service) uiLogout(w http.ResponseWriter, r *http.Request) {
	if id, _ := s.ui.session(r); id != "" {
		s.ui.endSession(id)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookieName(r), Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// render writes a page: the layout with the principal, its CSRF token and the page's data.
func (s *Service) render(w http.ResponseWriter, r *http.Request, code int, name string, data map[string]any) {
	t := s.ui.pages[name]
	u := uiOf(r)
	if data == nil {
		data = map[string]any{}
	}
	data["Page"] = name
	if u.p.Name != "" {
		data["Principal"] = u.p
		data["Admin"] = grantOf(r).admin() // what the page offers; the routes enforce the role
		data["Companies"] = u.p.companyLabel()
		data["SignedIn"] = u.sess != nil
	}
	data["Nonce"] = styleNonce(w)
	if _, ok := data["CSRF"]; !ok {
		data["CSRF"] = u.csrf
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "base", data); err != nil {
		s.log.Error("console template", "page", name, "error", err)
		http.Error(w, "template error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// styleNonce is the style nonce of the answer's Content-Security-Policy (uiHeaders).
func styleNonce(w http.ResponseWriter) string {
	_, rest, _ := strings.Cut(w.Header().Get("Content-Security-Policy"), "'nonce-")
	n, _, _ := strings.Cut(rest, "'")
	return n
}

// uiError renders an API error answer as a page with its status code.
func (s *Service) uiError(w http.ResponseWriter, r *http.Request, code int, b apiError) {
	s.render(w, r, code, "error", map[string]any{"Code": code, "Err": b})
}

// recorder captures an API handler's answer for a console page.
type recorder struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (rc *recorder) Header() http.Header { return rc.h }
func (rc *recorder) Write(b []byte) (int, error) {
	if rc.code == 0 {
		rc.code = http.StatusOK
	}
	return rc.body.Write(b)
}
func (rc *recorder) WriteHeader(code int) {
	if rc.code == 0 {
		rc.code = code
	}
}

// call runs an API handler with a JSON body built from in (nil: empty) and the given path values, and
// decodes its answer into out when it succeeded (2xx); a refusal is returned as its error body.
func (s *Service) call(r *http.Request, action string, in any, out any, path map[string]string) (int, *apiError) {
	rt, ok := s.apiRouteOf(action)
	if !ok {
		return http.StatusInternalServerError, &apiError{Error: "no API route " + action, Code: "internal"}
	}
	var b []byte
	if in != nil {
		b, _ = json.Marshal(in)
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(b))
	r2.ContentLength = int64(len(b))
	r2.Header.Set("Content-Type", "application/json")
	for k, v := range path {
		r2.SetPathValue(k, v)
	}
	rc := &recorder{h: http.Header{}}
	// The API route's declaration is enforced here too: the console reaches the API's handlers only
	// through it (authorize), with the console's principal.
	if r3, ok := s.authorize(rc, r2, rt.action, rt.access, uiOf(r).p); ok {
		rt.handler(rc, r3)
	}
	if rc.code >= 300 {
		var e apiError
		if json.Unmarshal(rc.body.Bytes(), &e) != nil || e.Error == "" {
			e = body("refused", exitNothingWritten, "refused")
		}
		return rc.code, &e
	}
	if out != nil {
		_ = json.Unmarshal(rc.body.Bytes(), out)
	}
	return rc.code, nil
}
