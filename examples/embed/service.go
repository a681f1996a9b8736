package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	cerrors "github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Service is the controller's HTTP API over a Dispatcher and a custom-state catalog.
type Service struct {
	d       *oduflow.Dispatcher
	cat     catalog.Store
	servers map[string]string // minion id -> company
	log     *slog.Logger
}

// NewService builds the API. servers maps each managed minion id to its company.
func NewService(d *oduflow.Dispatcher, cat catalog.Store, servers map[string]string, log *slog.Logger) *Service {
	s := &Service{d: d, cat: cat, servers: make(map[string]string, len(servers)), log: log}
	for m, c := range servers {
		s.servers[m] = c
	}
	return s
}

// maxBody bounds request bodies: a custom source is at most 64 KiB, JSON-escaped.
const maxBody = 4*profiles.MaxSourceBytes + 4096

// Handler returns the routes (Go 1.22 patterns: method and wildcards).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	h := func(pattern string, fn func(http.ResponseWriter, *http.Request, Identity)) {
		mux.HandleFunc(pattern, s.authenticated(fn))
	}
	h("POST /v1/servers/{minion}/profiles/{profile}/requests", s.startRequest)
	h("GET /v1/servers/{minion}/profiles/{profile}/requests/{request}", s.requestStatus)
	h("POST /v1/custom-states/validate", s.validateCustom)
	h("POST /v1/custom-states", s.createCustom)
	h("GET /v1/custom-states", s.listCustom)
	h("GET /v1/custom-states/{id}", s.getCustom)
	h("PUT /v1/custom-states/{id}/source", s.saveCustom)
	h("PUT /v1/servers/{minion}/custom-states/{id}", s.assignCustom)
	h("GET /v1/servers/{minion}/custom-states", s.listAssignments)
	h("POST /v1/servers/{minion}/custom-states/{id}/apply", s.applyCustom)
	h("GET /v1/servers/{minion}/custom-executions", s.listExecutions)
	h("GET /v1/servers/{minion}/custom-executions/{request}", s.executionStatus)
	return mux
}

// authenticated resolves the caller (example header scheme) and logs the request.
func (s *Service) authenticated(fn func(http.ResponseWriter, *http.Request, Identity)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := identityFrom(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthenticated", "missing or invalid identity headers")
			return
		}
		start := time.Now()
		fn(w, r, id)
		s.log.Info("request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("user", id.User), slog.String("role", string(id.Role)),
			slog.Duration("elapsed", time.Since(start)))
	}
}

// server resolves {minion} for the caller: a server the service does not manage, or one of a
// company the caller may not read, is 404 (its existence does not leak).
func (s *Service) server(w http.ResponseWriter, r *http.Request, id Identity) (minion, company string, ok bool) {
	minion = r.PathValue("minion")
	company, known := s.servers[minion]
	if !known || !id.CanRead(company) {
		writeError(w, http.StatusNotFound, "not_found", "no such server")
		return "", "", false
	}
	return minion, company, true
}

// serverAllowed is server for a request only some roles may make: after server's 404, 403
// when allowed is false (what "is for administrators").
func (s *Service) serverAllowed(w http.ResponseWriter, r *http.Request, id Identity, allowed bool,
	what string) (minion, company string, ok bool) {
	minion, company, ok = s.server(w, r, id)
	if !ok {
		return "", "", false
	}
	if !allowed {
		forbidden(w, what)
		return "", "", false
	}
	return minion, company, true
}

func forbidden(w http.ResponseWriter, what string) {
	writeError(w, http.StatusForbidden, "forbidden", what+" is for administrators")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is every error body: a stable code and a message without secrets or Salt output.
type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) {
	writeJSON(w, code, apiError{Error: errCode, Message: msg})
}

// decode reads a JSON body strictly (unknown fields refused).
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, "bad_request", "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// decodeAllowed is decode for a request only some roles may make: when allowed is false it
// answers 403 (what "is for administrators") without reading the body.
func decodeAllowed(w http.ResponseWriter, r *http.Request, allowed bool, what string, v any) bool {
	if !allowed {
		forbidden(w, what)
		return false
	}
	return decode(w, r, v)
}

// reply answers v with code, or, when err is set, the error as fail maps it (v is then not
// written).
func (s *Service) reply(w http.ResponseWriter, r *http.Request, code int, v any, err error) {
	if err != nil {
		s.fail(r.Context(), w, err)
		return
	}
	writeJSON(w, code, v)
}

// requestIDOrNew is the request id a start body names, or a new canonical one when it names
// none.
func requestIDOrNew(id string) string {
	if id == "" {
		return receipt.NewRequestID()
	}
	return id
}

// fail maps a library error to a status and a stable code. Messages come from the library's
// errors, which never hold secrets or raw Salt output.
func (s *Service) fail(ctx context.Context, w http.ResponseWriter, err error) {
	code, status := "internal", http.StatusInternalServerError
	var ce *profiles.CustomError
	switch {
	case cerrors.As(err, &ce):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": "invalid_source", "valid": false,
			"code": ce.Code, "message": ce.Message, "line": ce.Line, "column": ce.Column})
		return
	case cerrors.Is(err, oduflow.ErrInvalidInput), cerrors.Is(err, catalog.ErrInvalid):
		code, status = "invalid_input", http.StatusBadRequest
	case cerrors.Is(err, oduflow.ErrMismatch), cerrors.Is(err, oduflow.ErrMismatch),
		cerrors.Is(err, oduflow.ErrMismatch), cerrors.Is(err, catalog.ErrExists):
		code, status = "request_bound_elsewhere", http.StatusConflict
	case cerrors.Is(err, catalog.ErrNotFound), cerrors.Is(err, oduflow.ErrNoClaim):
		code, status = "not_found", http.StatusNotFound
	case cerrors.Is(err, oduflow.ErrNotAssigned):
		code, status = "not_assigned", http.StatusConflict
	case cerrors.Is(err, oduflow.ErrInitialConfigurationMissing):
		code, status = "initial_configuration_missing", http.StatusConflict
	case cerrors.Is(err, oduflow.ErrUncertain):
		code, status = "uncertain_execution", http.StatusConflict
	case cerrors.Is(err, oduflow.ErrNeedsConfirmation):
		code, status = "failure_not_confirmed", http.StatusConflict
	case cerrors.Is(err, oduflow.ErrApplyAgainWithoutTerminal):
		code, status = "no_terminal_result", http.StatusConflict
	case cerrors.Is(err, salt.ErrNotSent):
		code, status = "master_unreachable", http.StatusServiceUnavailable
	}
	if status == http.StatusInternalServerError {
		s.log.ErrorContext(ctx, "request failed", slog.String("error", err.Error()))
		writeError(w, status, code, "internal error")
		return
	}
	writeError(w, status, code, err.Error())
}

// parseProfile accepts the fixed profiles (custom states have their own routes).
func parseProfile(s string) (receipt.Profile, bool) {
	switch p := receipt.Profile(s); p {
	case receipt.ProfileConfigure, receipt.ProfileProduction, receipt.ProfileVolumeResize, receipt.ProfileCredentials:
		return p, true
	}
	return "", false
}
