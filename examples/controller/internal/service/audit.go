package service

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/oduflow/oduflow-go/receipt"
)

// auditRecord is what one HTTP request adds to the audit trail; handlers fill it in as they learn it.
type auditRecord struct {
	httpRequestID string
	action        string
	mutating      bool
	principal     *Principal
	company       string // the target's company, once resolved
	minion        string
	requestID     string
	errorCode     string
	aggregated    bool // an unauthenticated refusal: counted by refusalCounter, no line of its own
}

type auditKey struct{}

func auditOf(ctx context.Context) *auditRecord {
	if rec, ok := ctx.Value(auditKey{}).(*auditRecord); ok {
		return rec
	}
	return &auditRecord{}
}

// noteTarget records the path's minion and request id when they are well formed (nothing else from a
// caller reaches the trail).
func (rec *auditRecord) noteTarget(r *http.Request) {
	if m := r.PathValue("minion"); receipt.ValidateMinionID(m) == nil {
		rec.minion = m
	}
	rec.noteRequest(r.PathValue("request_id"))
}

func (rec *auditRecord) noteRequest(id string) {
	if receipt.ValidateRequestID(id) == nil {
		rec.requestID = id
	}
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (MaxBytesReader closes it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// audited wraps the whole API: a request id (X-Request-Id), the audit record, and one audit line for a
// mutating call or a refusal of an authenticated caller (403, 429) once the answer is written; the
// refusals of callers that did not authenticate are counted per source and interval instead.
func (s *Service) audited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &auditRecord{httpRequestID: receipt.NewRequestID()}
		w.Header().Set("X-Request-Id", rec.httpRequestID)
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), auditKey{}, rec)))
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		refused := sw.status == http.StatusUnauthorized || sw.status == http.StatusForbidden || sw.status == http.StatusTooManyRequests
		if (rec.mutating || refused) && !rec.aggregated {
			s.auditLine(r.Context(), rec, sw.status, refused)
		}
	})
}

// auditLine writes one line: principal, role, companies, the target's company, action, minion, request
// ids, outcome, HTTP status, error code. Never a token, a hash, a body or a source.
func (s *Service) auditLine(ctx context.Context, rec *auditRecord, status int, refused bool) {
	outcome := "ok"
	switch {
	case refused:
		outcome = "refused"
	case status >= 400:
		outcome = "error"
	}
	attrs := []slog.Attr{slog.Bool("audit", true), slog.String("action", rec.action)}
	if p := rec.principal; p != nil {
		attrs = append(attrs, slog.String("principal", p.Name), slog.String("role", string(p.Role)),
			slog.String("principal_companies", p.companyLabel()))
	} else {
		attrs = append(attrs, slog.String("principal", ""), slog.String("role", ""))
	}
	attrs = append(attrs, slog.String("company", rec.company), slog.String("minion", rec.minion),
		slog.String("request_id", rec.requestID), slog.String("http_request_id", rec.httpRequestID),
		slog.String("outcome", outcome), slog.Int("http_status", status), slog.String("error_code", rec.errorCode))
	s.audit.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
}
