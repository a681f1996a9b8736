package salt

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

const vectorDir = "testdata/vectors"

func readVector(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// capturedLoad decodes a captured request and returns its load.
func capturedLoad(t *testing.T, name string) map[string]any {
	t.Helper()
	v, err := decodeValue(readVector(t, "clear/"+name+".request.bin"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v.(map[string]any)["load"].(map[string]any)
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// goldenRequest builds the request of one scenario through the package's
// builders, from the scenario's semantic inputs. Credentials are taken from
// the capture (they are the lab's throwaway values).
func goldenRequest(t *testing.T, name string) *orderedMap {
	t.Helper()
	load := capturedLoad(t, name)
	kw, _ := load["kwargs"].(map[string]any)
	var am authMaterial
	switch {
	case kw != nil && kw["token"] != nil:
		am = authMaterial{kind: authToken, token: str(kw, "token"), key: str(load, "key")}
	case kw != nil && kw["eauth"] != nil:
		am = authMaterial{kind: authEauth, eauth: str(kw, "eauth"), username: str(kw, "username"),
			password: str(kw, "password"), key: str(load, "key")}
	case load["eauth"] != nil:
		am = authMaterial{kind: authEauth, eauth: str(load, "eauth"), username: str(load, "username"), password: str(load, "password")}
	case load["token"] != nil && load["cmd"] != "get_token":
		am = authMaterial{kind: authToken, token: str(load, "token")}
	default:
		am = authMaterial{kind: authKey, user: "root", key: str(load, "key")}
	}
	const minion = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	const ghost = "client-00000000-0000-4000-8000-000000000000"
	pub := func(tgt Target, fun string, args []any, kwargs map[string]any, timeout int) *orderedMap {
		req := PublishRequest{Target: tgt, Fun: fun, Args: args, Kwargs: kwargs, Timeout: timeout, JID: JID(str(load, "jid"))}
		m, err := publishLoad(req, am, "root")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	list := ListTarget(minion)
	switch name[:3] {
	case "00_":
		return pingLoad(newOrderedMap().Set("probe", "saltlab"))
	case "01_", "02a", "02b", "02e", "04a", "04b", "04d":
		return pub(list, "test.ping", nil, nil, 5)
	case "02c", "04h":
		return newOrderedMap().Set("eauth", am.eauth).Set("username", am.username).Set("password", am.password).Set("cmd", "mk_token")
	case "02d":
		return newOrderedMap().Set("token", str(load, "token")).Set("cmd", "get_token")
	case "03a":
		m, _ := runnerLoad("test.arg", []any{"pos1", 2}, map[string]any{"kw": "v"}, am)
		return m
	case "03b":
		m, _ := runnerLoad("jobs.list_jobs", nil, nil, am)
		return m
	case "03c", "04g":
		m, _ := wheelLoad("key.list_all", nil, am)
		return m
	case "04c":
		return pub(list, "cmd.run", []any{"echo hi"}, nil, 5)
	case "04e":
		return pub(GlobTarget("nomatch-*"), "test.ping", nil, nil, 5)
	case "04f":
		m, _ := runnerLoad("test.arg", []any{"x"}, nil, am)
		return m
	case "05a":
		return pub(list, "state.apply", []any{"roles.client_stack"}, nil, 30)
	case "05b":
		return pub(list, "state.apply", []any{"roles.client_production"}, nil, 30)
	case "06a":
		return pub(list, "state.apply", []any{"capture.broken_yaml"}, nil, 30)
	case "06b":
		return pub(list, "state.apply", []any{"capture.bad_require_in"}, nil, 30)
	case "06c":
		return pub(list, "state.apply", []any{"capture.missing_require"}, nil, 30)
	case "07_":
		return pub(list, "state.apply", []any{"roles.client_stack"}, map[string]any{"test": true}, 30)
	case "08a":
		return pub(ListTarget(ghost), "test.ping", nil, nil, 5)
	case "08b":
		return pub(ListTarget(minion, ghost), "test.ping", nil, nil, 10)
	case "09a":
		return pub(list, "test.sleep", []any{6}, nil, 5)
	case "09b", "09c":
		return pub(list, "saltutil.find_job", []any{"20261129154606070624"}, nil, 10)
	case "10_":
		high := newOrderedMap().Set("lab_high_ok", newOrderedMap().
			Set("test", []any{"succeed_without_changes", newOrderedMap().Set("name", "high data ok")}).
			Set("__sls__", "saltlab.high").Set("__env__", "base"))
		return pub(list, "state.high", []any{high}, nil, 30)
	}
	t.Fatalf("no golden builder for %s", name)
	return nil
}

func scenarioNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "clear", "*.request.bin"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".request.bin"))
	}
	sort.Strings(names)
	return names
}

// TestGoldenRequests reproduces every captured request byte for byte.
func TestGoldenRequests(t *testing.T) {
	t.Parallel()
	c, err := NewClient("tcp://127.0.0.1:1", WithEnvelopeVersion(2))
	if err != nil {
		t.Fatal(err)
	}
	names := scenarioNames(t)
	if len(names) != 30 {
		t.Fatalf("expected 30 captured requests, found %d", len(names))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			want := readVector(t, "clear/"+name+".request.bin")
			got, err := c.envelope(goldenRequest(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("bytes differ\n got %x\nwant %x", got, want)
			}
		})
	}
}

// jsonNormal converts a decoded value to its JSON form for comparison with
// the capture's JSON views.
func jsonNormal(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

type jsonView struct {
	Value any `json:"value"`
}

// TestGoldenReplies decodes every captured reply, compares it with the
// capture's decoded view, and interprets it with the command's parser.
func TestGoldenReplies(t *testing.T) {
	t.Parallel()
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			raw := readVector(t, "clear/"+name+".reply.bin")
			v, err := decodeValue(raw)
			if err != nil {
				t.Fatal(err)
			}
			var view jsonView
			if err := json.Unmarshal(readVector(t, "clear/"+name+".reply.json"), &view); err != nil {
				t.Fatal(err)
			}
			if got := jsonNormal(t, v); !reflect.DeepEqual(got, view.Value) {
				t.Fatalf("decoded %v\nwant %v", got, view.Value)
			}
			checkReplySemantics(t, name, v)
		})
	}
}

func checkReplySemantics(t *testing.T, name string, v any) {
	t.Helper()
	cmd := str(capturedLoad(t, name), "cmd")
	var me *MasterError
	switch {
	case cmd == "ping":
		if m := v.(map[string]any); m["cmd"] != "ping" || m["probe"] != "saltlab" {
			t.Fatalf("ping echo %v", m)
		}
	case strings.HasPrefix(name, "04a"), strings.HasPrefix(name, "04b"), strings.HasPrefix(name, "04d"):
		_, err := parsePublishReply(v)
		if !errors.Is(err, ErrAuthentication) || errors.Is(err, ErrAuthorization) || !errors.As(err, &me) || !IsNotPublished(err) {
			t.Fatalf("want ErrAuthentication, got %v", err)
		}
		if me.Name != "AuthenticationError" {
			t.Fatalf("name %q", me.Name)
		}
	case strings.HasPrefix(name, "04c"):
		_, err := parsePublishReply(v)
		if !errors.Is(err, ErrAuthorization) || errors.Is(err, ErrAuthentication) || !IsNotPublished(err) {
			t.Fatalf("want ErrAuthorization, got %v", err)
		}
	case strings.HasPrefix(name, "04e"), strings.HasPrefix(name, "08a"):
		_, err := parsePublishReply(v)
		var nm *noMinionsError
		if !errors.Is(err, ErrNoMinions) || !errors.As(err, &nm) || !strings.Contains(nm.Message, "could not resolve") || !IsNotPublished(err) {
			t.Fatalf("want ErrNoMinions, got %v", err)
		}
	case strings.HasPrefix(name, "04f"), strings.HasPrefix(name, "04g"):
		if err := replyError(v); !errors.Is(err, ErrAuthentication) || !errors.As(err, &me) || me.Name != "EauthAuthenticationError" {
			t.Fatalf("want EauthAuthenticationError, got %v", err)
		}
	case strings.HasPrefix(name, "04h"):
		if s, ok := v.(string); !ok || s != "" {
			t.Fatalf("want empty string, got %v", v)
		}
	case cmd == "publish":
		res, err := parsePublishReply(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := str(capturedLoad(t, name), "jid"); want != "" && string(res.JID) != want {
			t.Fatalf("jid %s want %s", res.JID, want)
		}
		if len(res.Minions) != 1 || res.Minions[0] != "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b" {
			t.Fatalf("minions %v", res.Minions)
		}
		if strings.HasPrefix(name, "08b") != (len(res.Missing) == 1) {
			t.Fatalf("missing %v", res.Missing)
		}
	case cmd == "mk_token", cmd == "get_token":
		tok, ok := parseToken(v)
		if !ok || len(tok.Token) != 64 || tok.Name != "oduflow" || tok.Eauth != "file" ||
			tok.Expire.Sub(tok.Start).Round(time.Second) != 12*time.Hour {
			t.Fatalf("token %v", tok)
		}
		if strings.Contains(tok.String(), tok.Token) || strings.Contains(fmtV(tok), tok.Token) {
			t.Fatal("token printed")
		}
	case cmd == "runner":
		m := v.(map[string]any)
		if _, err := ParseJID(str(m, "jid")); err != nil || !strings.HasPrefix(str(m, "tag"), "salt/run/") {
			t.Fatalf("runner reply %v", m)
		}
	case cmd == "wheel":
		res, err := parseWheelReply(v)
		if err != nil || !res.Success || res.JID == "" || res.Tag != "salt/wheel/"+string(res.JID) {
			t.Fatalf("wheel %v %v", res, err)
		}
		if _, ok := res.Return.(map[string]any)["minions"]; !ok {
			t.Fatalf("wheel return %v", res.Return)
		}
	default:
		t.Fatalf("unchecked scenario %s", name)
	}
}
