package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// pingTimeout bounds one minion readiness check (test.ping, then capabilities).
const pingTimeout = 15 * time.Second

// MaxBodyBytes bounds a request body (a start's {"request_id": ...} is under 100 bytes).
const MaxBodyBytes = 4 << 10

// readyTimeout bounds one readiness check (a master ping when the cached proof is stale).
const readyTimeout = 5 * time.Second

// Handler is the service's HTTP API (see the package doc): /healthz and /readyz open, every other route
// behind protect (a principal, the per-principal bound) and the audit trail.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.apiRoutes() {
		mux.HandleFunc(rt.pattern, s.protect(rt.action, rt.access, rt.handler))
	}
	s.uiRoutes(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	return s.audited(mux)
}

// apiRoute is one route of the API: its pattern, the action the audit trail names, who may call it
// (access: the role, whether it writes, the scope of its targets) and its handler.
type apiRoute struct {
	pattern, action string
	access          access
	handler         http.HandlerFunc
}

// apiRoutes is the API's route table: every route but /healthz and /readyz (open) and the console's.
// protect enforces each route's access before its handler runs (authorize), so no handler checks a role
// or a company itself.
func (s *Service) apiRoutes() []apiRoute {
	if s.routes == nil { // a Service not made by Open (tests of this package)
		return s.routeTable()
	}
	return s.routes()
}

func (s *Service) routeTable() []apiRoute {
	return []apiRoute{
		{"POST /v1/requests/{profile}/{minion}", "start", adminWrites(scopeMinion), s.start},
		{"GET /v1/requests/{profile}/{minion}/{request_id}", "status", anyReads(scopeMinion), s.status},
		{"GET /v1/requests/{profile}/{minion}/{request_id}/events", "status_events", anyReads(scopeMinion), s.statusEvents},
		{"POST /v1/requests/{minion}/{request_id}/resume", "resume", adminWrites(scopeMinion), s.resume},
		{"GET /v1/unresolved", "unresolved", anyReads(scopeListed), s.unresolved},
		{"GET /v1/minions/{minion}/ping", "ping", anyReads(scopeMinion), s.ping},
		// The custom-state API over the catalog: definitions with revisions, validate (compiles, never
		// executes or writes, yet an administrator's: observers never handle source), assignments,
		// apply and apply again, status with counts and error codes.
		{"POST /v1/custom-states/validate", "custom_validate", adminReads(scopeNone), s.validateCustom},
		{"POST /v1/custom-states", "custom_create", adminWrites(scopeBodyCompany), s.createCustom},
		{"GET /v1/custom-states", "custom_list", anyReads(scopeListed), s.listCustom},
		{"GET /v1/custom-states/{id}", "custom_get", anyReads(scopeDefinition), s.getCustom},
		{"PUT /v1/custom-states/{id}/source", "custom_save", adminWrites(scopeDefinition), s.saveCustom},
		{"PUT /v1/minions/{minion}/custom-states/{id}", "custom_assign", adminWrites(scopeMinion | scopeDefinition), s.assignCustom},
		{"GET /v1/minions/{minion}/custom-states", "custom_assignments", anyReads(scopeMinion), s.listAssignments},
		{"POST /v1/minions/{minion}/custom-states/{id}/apply", "custom_apply", adminWrites(scopeMinion | scopeDefinition), s.applyCustom},
		{"GET /v1/minions/{minion}/custom-executions", "custom_executions", anyReads(scopeMinion), s.listExecutions},
		{"GET /v1/minions/{minion}/custom-executions/{request_id}", "custom_status", anyReads(scopeMinion), s.executionStatus},
		{"GET /v1/minions/{minion}/custom-executions/{request_id}/events", "custom_status_events", anyReads(scopeMinion), s.executionEvents},
		{"GET /metrics", "metrics", anyReads(scopeNone), promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}).ServeHTTP},
		{"/", "route", anyReads(scopeNone), func(w http.ResponseWriter, r *http.Request) {
			s.writeError(w, r, "route", http.StatusNotFound,
				body(fmt.Sprintf("no route for %s %s", r.Method, oduflowenv.OneLine(truncate(r.URL.Path, 200))), oduflowenv.ExitUsage, "no_route"))
		}},
	}
}

// apiRouteOf returns the API route of action (the console calls the API's handlers through it).
func (s *Service) apiRouteOf(action string) (apiRoute, bool) {
	for _, rt := range s.apiRoutes() {
		if rt.action == action {
			return rt, true
		}
	}
	return apiRoute{}, false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// startBody is the optional body of a start.
type startBody struct {
	RequestID string `json:"request_id"`
}

func (s *Service) start(w http.ResponseWriter, r *http.Request) {
	const op = "start"
	profile, err := oduflowenv.ProfileIn(op, r.PathValue("profile"), s.table)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	minion := grantOf(r).minion // checked (scopeMinion)
	in, err := readStartBody(w, r)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	key := ""
	if in.RequestID == "" {
		in.RequestID = receipt.NewRequestID()
		key = oduflowenv.ScopedRequestID(minion, in.RequestID)
	} else if err := oduflowenv.CheckRequest(op, in.RequestID); err != nil {
		s.fail(w, r, op, err)
		return
	}
	auditOf(r.Context()).noteRequest(in.RequestID)
	if key == "" {
		if key, err = s.requestKey(r.Context(), minion, in.RequestID); err != nil {
			s.fail(w, r, op, err)
			return
		}
	}
	// The worker runs in this process with the request's context values (not its cancellation): the
	// client may hang up at once.
	ctx, created := withCreatedFlag(r.Context())
	resp, err := s.d.Start(ctx, minion, key, profile)
	if err != nil {
		s.fail(w, r, op, asCaller(err, key, in.RequestID))
		return
	}
	resp = callerResponse(resp, key, in.RequestID)
	code := http.StatusOK
	if created.Load() {
		code = http.StatusCreated
	}
	writeJSON(w, code, resp)
}

// readStartBody reads the optional JSON body: empty, or one object with request_id only (decodeBody).
func readStartBody(w http.ResponseWriter, r *http.Request) (startBody, error) {
	var in startBody
	err := decodeBody(w, r, "start", MaxBodyBytes, true, &in)
	return in, err
}

// callerResponse is resp as the caller names its request: its own id, not the stored key.
func callerResponse(resp oduflow.Response, key, request string) oduflow.Response {
	if resp.RequestID == key {
		resp.RequestID = request
	}
	return resp
}

// callerCustom is callerResponse for a custom response (its execution id too when it is the key).
func callerCustom(resp oduflow.CustomResponse, key, request string) oduflow.CustomResponse {
	if resp.RequestID == key {
		resp.RequestID = request
	}
	if resp.ExecutionID == key {
		resp.ExecutionID = request
	}
	return resp
}

func (s *Service) status(w http.ResponseWriter, r *http.Request) {
	const op = "status"
	profile, minion, request, key, ok := s.requestOf(w, r, op)
	if !ok {
		return
	}
	resp, err := s.d.Status(r.Context(), minion, key, profile)
	if err != nil {
		s.fail(w, r, op, asCaller(err, key, request))
		return
	}
	writeJSON(w, http.StatusOK, callerResponse(resp, key, request))
}

// requestOf reads and authorizes the request a route names ({profile}, {minion}, {request_id}): the
// profile of the table, the ids, the client in the caller's companies, and the request's stored key in the
// caller's scope (scope.go). It has answered (ok false) when it refuses.
func (s *Service) requestOf(w http.ResponseWriter, r *http.Request, op string) (profile receipt.Profile, minion, request, key string, ok bool) {
	profile, err := oduflowenv.ProfileIn(op, r.PathValue("profile"), s.table)
	if err != nil {
		s.fail(w, r, op, err)
		return "", "", "", "", false
	}
	minion, request = r.PathValue("minion"), r.PathValue("request_id")
	if err := errors.Join(oduflowenv.CheckMinionIn(op, minion, s.table), oduflowenv.CheckRequest(op, request)); err != nil {
		s.fail(w, r, op, firstError(err))
		return "", "", "", "", false
	}
	key, err = s.requestKey(r.Context(), minion, request)
	if err != nil {
		s.fail(w, r, op, err)
		return "", "", "", "", false
	}
	return profile, minion, request, key, true
}

func (s *Service) resume(w http.ResponseWriter, r *http.Request) {
	const op = "resume"
	minion, request := r.PathValue("minion"), r.PathValue("request_id")
	if err := errors.Join(oduflowenv.CheckMinionIn(op, minion, s.table), oduflowenv.CheckRequest(op, request)); err != nil {
		s.fail(w, r, op, firstError(err))
		return
	}
	key, err := s.requestKey(r.Context(), minion, request)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	resp, err := s.d.Resume(r.Context(), minion, key)
	if err != nil {
		s.fail(w, r, op, asCaller(err, key, request))
		return
	}
	writeJSON(w, http.StatusOK, callerResponse(resp, key, request))
}

// unresolvedRequest is one row of GET /v1/unresolved: the identities and the state an operator acts on.
type unresolvedRequest struct {
	MinionID     string           `json:"minion_id"`
	RequestID    string           `json:"request_id"`
	Profile      string           `json:"profile"`
	JID          string           `json:"jid"`
	Phase        string           `json:"phase"`
	Status       receipt.Status   `json:"status"`
	ErrorCode    claims.ErrorCode `json:"error_code"`
	Quarantining bool             `json:"quarantining"`
	CreatedAt    time.Time        `json:"created_at"`
}

func (s *Service) unresolved(w http.ResponseWriter, r *http.Request) {
	out := []unresolvedRequest{}
	g := grantOf(r)
	for u, err := range s.d.Unresolved(r.Context()) {
		if err != nil {
			s.fail(w, r, "unresolved", err)
			return
		}
		c := u.Claim
		if !g.sees(s.clients[c.MinionID]) {
			continue // another company's client (or, for a principal limited to companies, an unbound one)
		}
		out = append(out, unresolvedRequest{MinionID: c.MinionID, RequestID: c.RequestID, Profile: string(c.Profile),
			JID: c.JID, Phase: string(c.Phase), Status: u.Status, ErrorCode: c.ErrorCode, Quarantining: u.Quarantining,
			CreatedAt: c.CreatedAt})
	}
	writeJSON(w, http.StatusOK, map[string]any{"unresolved": out})
}

// readiness is GET /v1/minions/{minion}/ping: the Dispatcher's Readiness for the minion, with ready
// (every capability a new request needs) and the runtime guard's reason always present.
type readiness struct {
	MinionID          string `json:"minion_id"`
	Ready             bool   `json:"ready"`
	KeyAccepted       bool   `json:"key_accepted"`
	Reachable         bool   `json:"reachable"`
	Protocol          int    `json:"protocol"`
	PillarReady       bool   `json:"pillar_ready"`
	Proof             bool   `json:"proof"`
	Fencing           bool   `json:"fencing"`
	RuntimeGuard      bool   `json:"runtime_guard"`
	RuntimeGuardError string `json:"runtime_guard_error"`
	FencingError      string `json:"fencing_error,omitempty"`
}

func (s *Service) ping(w http.ResponseWriter, r *http.Request) {
	const op = "ping"
	minion := grantOf(r).minion // checked (scopeMinion)
	ctx, cancel := context.WithTimeout(r.Context(), pingTimeout)
	defer cancel()
	rd, err := s.d.Ping(ctx, minion)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	if s.guards != nil && rd.Reachable && rd.Protocol > 0 {
		s.guards.record(minion, rd.RuntimeGuard, rd.RuntimeGuardError)
	}
	writeJSON(w, http.StatusOK, readiness{MinionID: minion, Ready: rd.Ready(), KeyAccepted: rd.KeyAccepted,
		Reachable: rd.Reachable, Protocol: rd.Protocol, PillarReady: rd.PillarReady, Proof: rd.Proof,
		Fencing: rd.Fencing, RuntimeGuard: rd.RuntimeGuard, RuntimeGuardError: rd.RuntimeGuardError, FencingError: rd.FencingError})
}

// readyz answers 200 while a new request would be admitted (Dispatcher.Ready: the master answers, the
// credentials load, the event bus is live), 503 otherwise and from the start of a drain. Its body also
// names the minion module's runtime-guard reasons the ping route saw in the last 15 minutes, with how
// many minions reported each (runtime_guard_failures, absent when none): those minions refuse every run
// while the service is ready for the others. No minion id is shown here (the route is open).
func (s *Service) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		s.fail(w, r, "readyz", oduflow.ErrClosed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.d.Ready(ctx); err != nil {
		s.fail(w, r, "readyz", err)
		return
	}
	body := map[string]any{"status": "ready"}
	if s.guards != nil {
		if f := s.guards.failures(); f != nil {
			body["runtime_guard_failures"] = f
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// fail answers err (see classify) and logs it as one line.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, op string, err error) {
	code, b := classify(err)
	s.writeError(w, r, op, code, b)
}

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, op string, code int, b apiError) {
	level := slog.LevelWarn
	if code >= 500 {
		level = slog.LevelError
	}
	auditOf(r.Context()).errorCode = b.Reason
	s.log.Log(r.Context(), level, "request refused", "op", op, "method", r.Method, "path", r.URL.Path,
		"http_status", code, "code", b.Code, "reason", b.Reason, "error", b.Error)
	writeJSON(w, code, b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // messages name forms such as client-<canonical lowercase UUID>
	_ = enc.Encode(v)
}

// firstError is the first of a Join's errors (one message per answer).
func firstError(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		return j.Unwrap()[0]
	}
	return err
}
