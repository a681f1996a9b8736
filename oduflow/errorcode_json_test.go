package oduflow_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The bytes below were produced by the release before ErrorCode was a type (error codes were plain
// strings): typing the field must not change one byte a claim store, a Response reader or a catalog holds.
const (
	oldClaimJSON = `{"protocol":1,"minion_id":"client-0f8fad5b-d9cb-469f-a165-70867728950e",` +
		`"request_id":"6f1c2a9e-2b1d-4c55-9d59-0d6f7f0b8a11",` +
		`"profile":"configure","role":"configure","jid":"20261204180000000000","phase":"terminal",` +
		`"created_at":"2026-12-04T18:00:00Z","finished_at":"2026-12-04T18:01:00Z","status":"failed",` +
		`"passed":0,"total":1,"error_code":"quarantined","evidence":"preflight","generation":0}` + "\n"
	oldResponseJSON = `{"minion_id":"client-0f8fad5b-d9cb-469f-a165-70867728950e",` +
		`"request_id":"r","jid":"20261204180000000000","status":"failed",` +
		`"passed":0,"total":1,"error_code":"minion_refused"}`
	oldNotStartedJSON = `{"minion_id":"client-0f8fad5b-d9cb-469f-a165-70867728950e",` +
		`"request_id":"r","jid":null,"status":"not_started",` +
		`"passed":0,"total":0,"error_code":""}`
	oldCustomJSON = `{"minion_id":"client-0f8fad5b-d9cb-469f-a165-70867728950e",` +
		`"request_id":"r","execution_id":"e","jid":"20261204180000000000",` +
		`"status":"failed","passed":0,"total":1,"error_code":"never_ran"}`
)

func TestErrorCodeJSONUnchanged(t *testing.T) {
	at := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	fin := at.Add(time.Minute)
	jid, minion := "20261204180000000000", "client-0f8fad5b-d9cb-469f-a165-70867728950e"
	c := &claims.Claim{Protocol: 1, MinionID: minion, RequestID: "6f1c2a9e-2b1d-4c55-9d59-0d6f7f0b8a11",
		Profile: receipt.ProfileConfigure, Role: "configure", JID: jid, Phase: claims.PhaseTerminal,
		CreatedAt: at, FinishedAt: &fin, Status: receipt.StatusFailed, Passed: 0, Total: 1,
		ErrorCode: claims.CodeQuarantined, Evidence: "preflight"}
	b, err := c.MarshalBinary()
	if err != nil || string(b) != oldClaimJSON {
		t.Fatalf("claim encodes as %s (%v), want the old bytes %s", b, err, oldClaimJSON)
	}
	var back claims.Claim
	if err := back.UnmarshalBinary([]byte(oldClaimJSON)); err != nil || back.ErrorCode != claims.CodeQuarantined {
		t.Fatalf("old claim decodes with code %q (%v), want %q", back.ErrorCode, err, claims.CodeQuarantined)
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"response", oduflow.Response{MinionID: minion, RequestID: "r", JID: &jid, Status: receipt.StatusFailed,
			Total: 1, ErrorCode: claims.CodeMinionRefused}, oldResponseJSON},
		{"not_started response (error_code present, empty)", oduflow.Response{MinionID: minion, RequestID: "r",
			Status: receipt.StatusNotStarted}, oldNotStartedJSON},
		{"custom response", oduflow.CustomResponse{MinionID: minion, RequestID: "r", ExecutionID: "e", JID: &jid,
			Status: receipt.StatusFailed, Total: 1, ErrorCode: claims.CodeNeverRan}, oldCustomJSON},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s encodes as %s (%v), want the old bytes %s", tc.name, b, err, tc.want)
		}
	}
	var r oduflow.Response
	if err := json.Unmarshal([]byte(oldResponseJSON), &r); err != nil || r.ErrorCode != claims.CodeMinionRefused {
		t.Fatalf("old response decodes with code %q (%v)", r.ErrorCode, err)
	}
}

// Every ErrorCode constant keeps its wire value (a renamed value would strand the claims already stored)
// and is a row of the repository README's "Error codes" table (the one the package doc points to).
func TestErrorCodeValues(t *testing.T) {
	want := map[claims.ErrorCode]string{claims.CodeLeaseBusy: "lease_busy", claims.CodeQuarantined: "quarantined", claims.CodeClaimStore: "claim_store_unreadable", claims.CodeCapability: "capability_unverified", claims.CodeMinionKey: "minion_key_unavailable", claims.CodeEventBus: "event_bus_unavailable", claims.CodeRoleNotAllowed: "role_not_allowed", claims.CodePayload: "payload_unavailable", claims.CodeAuthentication: "publish_authentication", claims.CodeAuthorization: "publish_authorization", claims.CodeNoMinions: "publish_no_minions", claims.CodeBadLoad: "publish_bad_load", claims.CodeMasterException: "publish_master_exception", claims.CodeNotSent: "publish_not_sent", claims.CodeRefused: "publish_refused", claims.CodeOutcomeUnknown: "publish_outcome_unknown", claims.CodeNoTrustworthyReturn: "no_trustworthy_return", claims.CodeMinionUnknown: "minion_reported_unknown", claims.CodeWorkerLost: "worker_lost", claims.CodeWorkerLaunch: "worker_launch_failed", claims.CodeJIDCollision: "jid_collision", claims.CodeAsserted: "asserted", claims.CodeFenced: "fenced", claims.CodeFenceBehind: "fence_behind", claims.CodeNeverRan: "never_ran", claims.CodeDispatcherClosed: "dispatcher_closed", claims.CodeRuntimeGuard: "runtime_guard_failed", claims.CodeMinionRefused: "minion_refused", claims.CodeLegacyError: "legacy_error", claims.CodeFenceExhausted: "fence_exhausted", claims.CodeProfileTableMismatch: "profile_table_mismatch"}
	for c, v := range want {
		if string(c) != v {
			t.Errorf("code %q, want %q", c, v)
		}
	}
	// The declared constants (package claims: codes.go, and CodeLegacyError in claim.go), read from the
	// source so that a new code must join this table.
	declared := 0
	for _, name := range []string{"claims/codes.go", "claims/claim.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ErrorCode" {
					continue
				}
				for i, n := range vs.Names {
					v, _ := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
					declared++
					if want[claims.ErrorCode(v)] != v {
						t.Errorf("%s = %q is not in this test's table", n.Name, v)
					}
				}
			}
		}
	}
	if declared != len(want) {
		t.Errorf("package claims declares %d codes, the table has %d", declared, len(want))
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range want {
		if !strings.Contains(string(readme), "| `"+v+"` |") {
			t.Errorf("code %q is not a row of the README's error code table", v)
		}
	}
}
