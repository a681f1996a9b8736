package service

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// uiClientRow is one row of the clients list.
type uiClientRow struct {
	Minion      string
	Company     string
	Readiness   *uiReadiness
	Last        []uiLast
	Quarantined int
}

// uiLast is a client's last request of one profile.
type uiLast struct {
	Profile   string
	RequestID string
	Status    string
	ErrorCode string
	At        time.Time
}

// visibleClients are the bound clients of the principal's companies, sorted, whose id or company
// contains q.
func (s *Service) visibleClients(g grant, q string) []string {
	q = strings.ToLower(q)
	out := make([]string, 0, len(s.clients))
	for m, c := range s.clients {
		if !g.sees(c) {
			continue
		}
		if q != "" && !strings.Contains(m, q) && !strings.Contains(strings.ToLower(c), q) {
			continue
		}
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// clientSummary reads a client's claims: the last request of each profile and how many quarantine it.
func (s *Service) clientSummary(ctx context.Context, minion string) (last []uiLast, quarantined int, history []*claims.Claim) {
	cs, err := s.store.ListByClient(ctx, minion)
	if err != nil {
		return nil, 0, nil
	}
	slices.SortFunc(cs, func(a, b *claims.Claim) int { return b.CreatedAt.Compare(a.CreatedAt) })
	seen := map[receipt.Profile]bool{}
	for _, c := range cs {
		if c.Unresolved() && c.Quarantining() {
			quarantined++
		}
		if seen[c.Profile] || c.Profile == "" {
			continue
		}
		seen[c.Profile] = true
		last = append(last, uiLast{Profile: string(c.Profile), RequestID: c.RequestID, Status: claimStatus(c),
			ErrorCode: string(c.ErrorCode), At: c.CreatedAt})
	}
	return last, quarantined, cs
}

// claimStatus is a claim's recorded status, or its phase while it has none.
func claimStatus(c *claims.Claim) string {
	if c.Status != "" {
		return string(c.Status)
	}
	return string(c.Phase)
}

func (s *Service) uiClients(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > 128 {
		q = q[:128]
	}
	all := s.visibleClients(grantOf(r), q)
	pages := (len(all) + uiPageSize - 1) / uiPageSize
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(1, min(page, max(pages, 1)))
	lo := (page - 1) * uiPageSize
	hi := min(lo+uiPageSize, len(all))
	rows := make([]uiClientRow, 0, hi-lo)
	for _, m := range all[lo:hi] {
		row := uiClientRow{Minion: m, Company: s.clients[m]}
		if v, ok := s.ui.readiness.Load(m); ok {
			rd := v.(uiReadiness)
			row.Readiness = &rd
		}
		row.Last, row.Quarantined, _ = s.clientSummary(r.Context(), m)
		rows = append(rows, row)
	}
	link := func(p int) string {
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		v.Set("page", strconv.Itoa(p))
		return "/ui/clients?" + v.Encode()
	}
	data := map[string]any{"Rows": rows, "Q": q, "Total": len(all), "PageNo": page, "Pages": max(pages, 1)}
	if page > 1 {
		data["Prev"] = link(page - 1)
	}
	if page < pages {
		data["Next"] = link(page + 1)
	}
	s.render(w, r, http.StatusOK, "clients", data)
}

// uiClient is a client's page: readiness (checked now), quarantine, start buttons of the fixed profiles,
// history, custom-state assignments (Apply, Apply Again) and executions.
func (s *Service) uiClient(w http.ResponseWriter, r *http.Request) {
	minion, company := grantOf(r).minion, grantOf(r).company // checked by uiProtect (scopeMinion)
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	rd, err := s.d.Ping(ctx, minion)
	cancel()
	ready := uiReadiness{At: s.ui.now()}
	if err != nil {
		ready.Reason = "readiness check failed: " + classifyReason(err)
	} else {
		ready.Ready = rd.Ready()
		switch {
		case !rd.KeyAccepted:
			ready.Reason = "the master has not accepted the client's key"
		case !rd.Reachable:
			ready.Reason = "the client does not answer"
		case !rd.RuntimeGuard:
			ready.Reason = "runtime guard: " + oduflowenv.OneLine(rd.RuntimeGuardError)
		case !rd.Ready():
			ready.Reason = "a capability is missing (protocol, pillar, proof or fencing)"
		}
		if s.guards != nil && rd.Reachable && rd.Protocol > 0 {
			s.guards.record(minion, rd.RuntimeGuard, rd.RuntimeGuardError)
		}
	}
	s.ui.readiness.Store(minion, ready)
	last, quarantined, history := s.clientSummary(r.Context(), minion)
	if len(history) > 50 {
		history = history[:50]
	}
	var assignments struct {
		Assignments []assignmentView `json:"assignments"`
	}
	s.call(r, "custom_assignments", nil, &assignments, nil)
	type applyRow struct {
		assignmentView
		RequestID, AgainID string
	}
	rows := make([]applyRow, 0, len(assignments.Assignments))
	for _, a := range assignments.Assignments {
		rows = append(rows, applyRow{assignmentView: a, RequestID: receipt.NewRequestID(), AgainID: receipt.NewRequestID()})
	}
	var execs struct {
		Executions []executionView `json:"executions"`
	}
	s.call(r, "custom_executions", nil, &execs, nil)
	slices.Reverse(execs.Executions)
	s.render(w, r, http.StatusOK, "client", map[string]any{"Minion": minion, "Company": company, "Ready": ready,
		"Last": last, "Quarantined": quarantined, "History": history, "Profiles": s.tableProfiles(),
		"Assignments": rows, "Executions": execs.Executions})
}

func classifyReason(err error) string {
	_, b := classify(err)
	return b.Reason
}

// tableProfiles are the profiles of the service's table (ODUFLOW_PROFILES; the seeds' four by default),
// the ones a client page offers to start.
func (s *Service) tableProfiles() []string {
	var out []string
	for _, p := range s.table.Profiles() {
		out = append(out, string(p))
	}
	return out
}

// uiRecorded renders a refusal an API helper wrote into rc.
func (s *Service) uiRecorded(w http.ResponseWriter, r *http.Request, rc *recorder) {
	var e apiError
	_ = json.Unmarshal(rc.body.Bytes(), &e)
	s.uiError(w, r, rc.code, e)
}

// uiConfirm asks for confirmation of a start naming the client and the profile; the request id is drawn
// here, once, and every submission of this form (a double click, a retry) carries the same id, so the
// service starts at most one request for it.
func (s *Service) uiConfirm(w http.ResponseWriter, r *http.Request) {
	const op = "ui_confirm"
	minion, company := grantOf(r).minion, grantOf(r).company // checked by uiProtect (scopeMinion)
	profile, err := oduflowenv.ProfileIn(op, r.PathValue("profile"), s.table)
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "confirm", map[string]any{"Minion": minion, "Company": company,
		"Profile": string(profile), "RequestID": receipt.NewRequestID()})
}

func (s *Service) uiFail(w http.ResponseWriter, r *http.Request, err error) {
	code, b := classify(err)
	s.uiError(w, r, code, b)
}

// uiStart starts the confirmed request (the start route, with the form's request id) and goes to its
// status page.
func (s *Service) uiStart(w http.ResponseWriter, r *http.Request) {
	minion, profile, request := r.PathValue("minion"), r.PathValue("profile"), r.PostFormValue("request_id")
	var resp oduflow.Response
	if code, e := s.call(r, "start", startBody{RequestID: request}, &resp, nil); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	http.Redirect(w, r, "/ui/clients/"+url.PathEscape(minion)+"/requests/"+url.PathEscape(profile)+"/"+url.PathEscape(resp.RequestID), http.StatusSeeOther)
}

// uiRequest is a request's status page: the status now, then live from the event stream.
func (s *Service) uiRequest(w http.ResponseWriter, r *http.Request) {
	var resp oduflow.Response
	if code, e := s.call(r, "status", nil, &resp, nil); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	minion, profile, request := r.PathValue("minion"), r.PathValue("profile"), r.PathValue("request_id")
	s.render(w, r, http.StatusOK, "request", map[string]any{"Minion": minion, "Profile": profile, "RequestID": request,
		"Resp": resp, "JID": deref(resp.JID), "Terminal": resp.Status.Terminal(),
		"Events": "/v1/requests/" + url.PathEscape(profile) + "/" + url.PathEscape(minion) + "/" + url.PathEscape(request) + "/events"})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// uiResume is "Resume status check": the resume route (another polling window; never publishes again),
// then back to the status page.
func (s *Service) uiResume(w http.ResponseWriter, r *http.Request) {
	var resp oduflow.Response
	if code, e := s.call(r, "resume", nil, &resp, nil); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	profile := r.PostFormValue("profile")
	if !s.table.Has(receipt.Profile(profile)) {
		profile = string(s.table.Profiles()[0])
	}
	http.Redirect(w, r, "/ui/clients/"+url.PathEscape(r.PathValue("minion"))+"/requests/"+url.PathEscape(profile)+"/"+url.PathEscape(r.PathValue("request_id")), http.StatusSeeOther)
}

// uiUnresolved lists the unresolved requests of the principal's companies, what each needs, and the
// oduflowctl command an operator runs on the master (the console has no reconcile button).
func (s *Service) uiUnresolved(w http.ResponseWriter, r *http.Request) {
	var out struct {
		Unresolved []unresolvedRequest `json:"unresolved"`
	}
	if code, e := s.call(r, "unresolved", nil, &out, nil); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	type row struct {
		unresolvedRequest
		Needs, Command string
	}
	rows := make([]row, 0, len(out.Unresolved))
	for _, u := range out.Unresolved {
		x := row{unresolvedRequest: u}
		switch {
		case u.Status == receipt.StatusRunning:
			x.Needs = "running: a worker or an adopter follows it; wait, or watch its status"
		case u.Quarantining:
			x.Needs = "unknown after dispatch: the client is quarantined until an operator reconciles it from the minion's receipt (or asserts the outcome)"
			x.Command = "oduflowctl reconcile --from-minion " + u.MinionID + " " + u.RequestID
		default:
			x.Needs = "unknown: resume its status check, or reconcile it"
			x.Command = "oduflowctl reconcile --from-minion " + u.MinionID + " " + u.RequestID
		}
		rows = append(rows, x)
	}
	s.render(w, r, http.StatusOK, "unresolved", map[string]any{"Rows": rows})
}

func (s *Service) uiCustomList(w http.ResponseWriter, r *http.Request) {
	var out struct {
		Definitions []definitionView `json:"definitions"`
	}
	if code, e := s.call(r, "custom_list", nil, &out, nil); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	s.render(w, r, http.StatusOK, "custom_list", map[string]any{"Definitions": out.Definitions})
}

func (s *Service) uiCustomNew(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "custom", map[string]any{"New": true, "Source": "configure_motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: hello\n"})
}

// uiSourceError renders the editor again with the validator's refusal (line and column).
func (s *Service) uiSourceError(w http.ResponseWriter, r *http.Request, code int, e *apiError, data map[string]any) {
	data["Err"] = e
	s.render(w, r, code, "custom", data)
}

func (s *Service) uiCustomCreate(w http.ResponseWriter, r *http.Request) {
	in := struct {
		Company string `json:"company"`
		Name    string `json:"name"`
		Source  string `json:"source"`
	}{r.PostFormValue("company"), r.PostFormValue("name"), r.PostFormValue("source")}
	var d definitionView
	if code, e := s.call(r, "custom_create", in, &d, nil); e != nil {
		s.uiSourceError(w, r, code, e, map[string]any{"New": true, "Source": in.Source, "Name": in.Name, "DefCompany": in.Company})
		return
	}
	http.Redirect(w, r, "/ui/custom-states/"+url.PathEscape(d.ID), http.StatusSeeOther)
}

// uiCustom is a definition: its metadata, revisions seen in executions, assignments; for administrators
// the editor with its source, Validate, Save and Assign. Observers never receive the source.
func (s *Service) uiCustom(w http.ResponseWriter, r *http.Request) {
	var d definitionSource
	if code, e := s.call(r, "custom_get", nil, &d, nil); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	s.render(w, r, http.StatusOK, "custom", s.customData(r, d))
}

func (s *Service) customData(r *http.Request, d definitionSource) map[string]any {
	data := map[string]any{"Def": d.definitionView}
	if grantOf(r).admin() {
		data["Source"] = d.Source
	}
	type rev struct {
		Revision   int
		Executions int
	}
	revs := map[int]int{}
	as, _ := s.cat.Assignments(r.Context(), "")
	var assigned []string
	for _, a := range as {
		if a.DefinitionID != d.ID || !grantOf(r).sees(a.Company) {
			continue
		}
		assigned = append(assigned, a.MinionID)
		es, _ := s.cat.Executions(r.Context(), a.MinionID)
		for _, e := range es {
			if e.DefinitionID == d.ID {
				revs[e.Revision]++
			}
		}
	}
	revs[d.Revision] += 0
	var list []rev
	for n, c := range revs {
		list = append(list, rev{n, c})
	}
	slices.SortFunc(list, func(a, b rev) int { return b.Revision - a.Revision })
	slices.Sort(assigned)
	data["Revisions"], data["Assigned"] = list, assigned
	return data
}

func (s *Service) uiCustomSave(w http.ResponseWriter, r *http.Request) {
	src := r.PostFormValue("source")
	var d definitionView
	if code, e := s.call(r, "custom_save", sourceBody{Source: src}, &d, nil); e != nil {
		var cur definitionSource
		if c2, e2 := s.call(r, "custom_get", nil, &cur, nil); e2 != nil {
			s.uiError(w, r, c2, *e2)
			return
		}
		data := s.customData(r, cur)
		data["Source"] = src
		s.uiSourceError(w, r, code, e, data)
		return
	}
	http.Redirect(w, r, "/ui/custom-states/"+url.PathEscape(d.ID), http.StatusSeeOther)
}

func (s *Service) uiCustomAssign(w http.ResponseWriter, r *http.Request) {
	minion := strings.TrimSpace(r.PostFormValue("minion"))
	auditOf(r.Context()).minion = ""
	if receipt.ValidateMinionID(minion) == nil {
		auditOf(r.Context()).minion = minion
		auditOf(r.Context()).company = s.clients[minion]
	}
	if code, e := s.call(r, "custom_assign", nil, nil, map[string]string{"minion": minion}); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	http.Redirect(w, r, "/ui/clients/"+url.PathEscape(minion), http.StatusSeeOther)
}

// uiApply is Apply (again=0) or Apply Again (again=1) with the request id the client page drew: a
// second submission of the same form answers from the same execution.
func (s *Service) uiApply(w http.ResponseWriter, r *http.Request) {
	in := applyBody{RequestID: r.PostFormValue("request_id"), Again: r.PostFormValue("again") == "1"}
	var resp oduflow.CustomResponse
	if code, e := s.call(r, "custom_apply", in, &resp, nil); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	http.Redirect(w, r, "/ui/clients/"+url.PathEscape(r.PathValue("minion"))+"/executions/"+url.PathEscape(in.RequestID), http.StatusSeeOther)
}

// uiExecution is a custom execution: counts and error code, live from its event stream.
func (s *Service) uiExecution(w http.ResponseWriter, r *http.Request) {
	var out struct {
		Status    oduflow.CustomResponse `json:"status"`
		Execution executionView          `json:"execution"`
	}
	if code, e := s.call(r, "custom_status", nil, &out, nil); e != nil {
		s.uiError(w, r, code, *e)
		return
	}
	minion, request := r.PathValue("minion"), r.PathValue("request_id")
	s.render(w, r, http.StatusOK, "execution", map[string]any{"Minion": minion, "RequestID": request,
		"St": out.Status, "Exec": out.Execution, "Terminal": out.Status.Status.Terminal(),
		"Events": "/v1/minions/" + url.PathEscape(minion) + "/custom-executions/" + url.PathEscape(request) + "/events"})
}
