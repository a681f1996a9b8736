package service_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
)

// FuzzRequestIDScope: random request ids (a small pool, so that they recur across inputs) used by random
// callers of two companies in random order, on one long-lived service whose state grows with every
// input. Whatever acme did with an id, globex's answers about it through its own client are exactly
// those of an id neither company ever used (status, status under another profile, resume, custom
// status), until globex uses it itself; a start by either company of an id it never used is 201 (the
// other cannot block it) and a second start 200 (at-most-once per client and request); no answer to
// globex names acme's client.
func FuzzRequestIDScope(f *testing.F) {
	env := startSim(f)
	a, b := env.addMinion(), env.addMinion()
	dir := f.TempDir()
	clients := filepath.Join(dir, "clients")
	if err := os.WriteFile(clients, []byte(a.ID()+" acme\n"+b.ID()+" globex\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	s := env.server(func(c *service.Config) { c.Auth.ClientsFile = clients; c.Auth.MaxInflight = 1000 })
	ma, mb := a.ID(), b.ID()
	used := map[string]map[string]bool{"acme": {}, "globex": {}} // company -> id -> started
	raw := func(t *testing.T, who, method, path, body string) (int, string) {
		return s.raw(t, who, method, path, body)
	}
	f.Add(uint8(0), []byte{0, 4})
	f.Add(uint8(1), []byte{1, 0, 4})
	f.Add(uint8(2), []byte{0, 1, 0, 1})
	f.Add(uint8(3), []byte{2, 4, 3, 4})
	f.Add(uint8(7), []byte{})
	f.Fuzz(func(t *testing.T, pick uint8, ops []byte) {
		id := uuid.NewSHA1(uuid.NameSpaceOID, []byte{pick % 8}).String()
		if len(ops) > 6 {
			ops = ops[:6]
		}
		for _, op := range ops {
			switch op % 5 {
			case 0, 1: // a start by acme (0) or globex (1)
				company, who, m, other := "acme", admin, ma, mb
				if op%5 == 1 {
					company, who, m, other = "globex", otherAdmin, mb, ma
				}
				code, body := raw(t, who, "POST", "/v1/requests/configure/"+m, `{"request_id":"`+id+`"}`)
				want := http.StatusCreated
				if used[company][id] {
					want = http.StatusOK
				}
				if code != want || strings.Contains(body, other) {
					t.Fatalf("%s starts %s (used before: %v): %d %s, want %d", company, id, used[company][id], code, body, want)
				}
				used[company][id] = true
			case 2: // acme reads and resumes its own
				raw(t, observer, "GET", "/v1/requests/configure/"+ma+"/"+id, "")
				raw(t, admin, "POST", "/v1/requests/"+ma+"/"+id+"/resume", "")
			case 3, 4: // what globex learns of the id
				if used["globex"][id] {
					continue
				}
				unseen := uuid.NewString()
				for _, q := range []struct{ who, method, path string }{
					{otherObserver, "GET", "/v1/requests/configure/" + mb + "/"},
					{otherObserver, "GET", "/v1/requests/production/" + mb + "/"},
					{otherAdmin, "POST", "/v1/requests/" + mb + "/"},
					{otherObserver, "GET", "/v1/minions/" + mb + "/custom-executions/"},
				} {
					suffix := ""
					if q.method == "POST" {
						suffix = "/resume"
					}
					c1, b1 := raw(t, q.who, q.method, q.path+id+suffix, "")
					c2, b2 := raw(t, q.who, q.method, q.path+unseen+suffix, "")
					if c1 != c2 || normalize(b1, id) != normalize(b2, unseen) || strings.Contains(b1, ma) || strings.Contains(b1, "acme") {
						t.Fatalf("%s %s%s (acme used it: %v): %d %s; an unseen id: %d %s", q.method, q.path, id, used["acme"][id], c1, b1, c2, b2)
					}
				}
			}
		}
	})
}
