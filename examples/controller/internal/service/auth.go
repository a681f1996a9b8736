package service

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"time"
)

// authenticator finds the principal of a request: a verified client certificate's CommonName in the
// principal mapping, else a bearer token; in the insecure mode, an administrator of every company.
type authenticator struct {
	tokens   *tokenSet
	certs    map[string]Principal
	insecure bool
}

// insecurePrincipal is every caller in the insecure mode.
var insecurePrincipal = Principal{Name: "insecure-no-auth", Role: RoleAdministrator, All: true}

// loadAuth reads the files a (checked) configuration names: tokens, the TLS principal mapping, the
// server's TLS configuration.
func loadAuth(ctx context.Context, a AuthConfig) (*authenticator, *tls.Config, error) {
	au := &authenticator{insecure: a.Insecure}
	if a.TokensFile != "" {
		ts, err := loadTokens(ctx, "ODUFLOW_AUTH_TOKENS", a.TokensFile)
		if err != nil {
			return nil, nil, err
		}
		au.tokens = ts
	}
	if a.TLSPrincipals != "" {
		m, err := loadPrincipals(ctx, "ODUFLOW_TLS_PRINCIPALS", a.TLSPrincipals)
		if err != nil {
			return nil, nil, err
		}
		au.certs = m
	}
	tc, err := serverTLS(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	return au, tc, nil
}

func (a *authenticator) principal(r *http.Request) (Principal, bool) {
	if a.insecure {
		return insecurePrincipal, true
	}
	if p, ok := certPrincipal(r, a.certs); ok {
		return p, true
	}
	return a.tokens.authenticate(bearerToken(r.Header.Get("Authorization")))
}

// protect is every route but /healthz and /readyz: it names the action for the audit trail, answers 401
// (WWW-Authenticate: Bearer) without a valid principal (429 past the source's unauthenticated rate;
// both counted per source and interval, refuseUnauthenticated) and 429 over the principal's bound, and
// only then runs h.
func (s *Service) protect(action string, a access, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := auditOf(r.Context())
		rec.action, rec.mutating = action, a.mutating
		rec.noteTarget(r)
		if rec.minion != "" {
			rec.company = s.clients[rec.minion] // the target's company, refusals included
		}
		p, ok := s.auth.principal(r)
		if !ok {
			p, ok = s.sessionPrincipal(r) // the console's session cookie: reads only (ui.go)
		}
		if !ok {
			s.refuseUnauthenticated(w, r)
			return
		}
		rec.principal = &p
		if rec.company == "" && r.PathValue("id") != "" && s.cat != nil {
			// A definition's route: its company names a refusal in the audit trail (metadata only,
			// read once the caller is authenticated; the handler authorizes before reading a body).
			if d, err := s.cat.Definition(r.Context(), r.PathValue("id")); err == nil {
				rec.company = d.Company
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
		granted, ok := s.authorize(w, r, action, a, p)
		if !ok {
			return
		}
		ctx := granted.Context() // its grant (grantOf) carries the principal
		if !streams(action) {
			// Every answer has a deadline, whatever its handler waits for (a store, the master, a minion):
			// a request cannot hold its in-flight slot and its connection for longer.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, RequestDeadline)
			defer cancel()
		}
		h(w, r.WithContext(ctx))
	}
}

// RequestDeadline bounds every request but the event streams (GET …/events, which last until the request
// is final or the client leaves): the longest a handler waits is a ping (15 s) or a master round trip
// (20 s), so a minute is a bound, not a budget.
const RequestDeadline = time.Minute

// streams reports whether a route's answer is a stream (its action ends in "_events"): it has no deadline.
func streams(action string) bool { return strings.HasSuffix(action, "_events") }
