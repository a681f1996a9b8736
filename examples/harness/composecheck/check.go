package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

var minionIDRe = regexp.MustCompile(`^client-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// envKeys are the variables harness.env must define (the lab's `saltlab.sh env` set).
var envKeys = []string{
	"ODUFLOW_SALT_MASTER", "ODUFLOW_SALT_EVENTS", "ODUFLOW_SALT_KEY_FILE", "ODUFLOW_SALT_EAUTH",
	"ODUFLOW_SALT_USER", "ODUFLOW_SALT_PASSWORD", "ODUFLOW_SALT_MINION",
}

// Check reads compose.yaml, master.d/oduflow.conf, minion.d/oduflow.conf, eauth_users.txt and
// harness.env from dir and returns every inconsistency it finds. err is for unreadable or
// syntactically invalid files.
func Check(dir fs.FS) (problems []string, err error) {
	var c checker
	compose, err := loadYAML(dir, "compose.yaml")
	if err != nil {
		return nil, err
	}
	master, err := loadYAML(dir, "master.d/oduflow.conf")
	if err != nil {
		return nil, err
	}
	minion, err := loadYAML(dir, "minion.d/oduflow.conf")
	if err != nil {
		return nil, err
	}
	env, err := loadEnv(dir, "harness.env")
	if err != nil {
		return nil, err
	}
	users, err := loadUsers(dir, "eauth_users.txt")
	if err != nil {
		return nil, err
	}
	c.compose(dir, compose)
	c.master(master)
	c.minion(minion, env)
	c.env(env, users)
	return c.problems, nil
}

type checker struct {
	problems []string
	// what compose.yaml publishes and bind-mounts for the host, which harness.env must name
	masterHostPort, masterRun, masterCache string
}

func (c *checker) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func loadYAML(dir fs.FS, name string) (map[string]any, error) {
	data, err := fs.ReadFile(dir, name)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%s: empty document", name)
	}
	return m, nil
}

func loadEnv(dir fs.FS, name string) (map[string]string, error) {
	data, err := fs.ReadFile(dir, name)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("%s:%d: want KEY=value", name, n)
		}
		if _, dup := env[k]; dup {
			return nil, fmt.Errorf("%s:%d: %s defined twice", name, n, k)
		}
		env[k] = v
	}
	return env, sc.Err()
}

func loadUsers(dir fs.FS, name string) (map[string]string, error) {
	data, err := fs.ReadFile(dir, name)
	if err != nil {
		return nil, err
	}
	users := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if u, p, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			users[u] = p
		}
	}
	return users, nil
}

func (c *checker) compose(dir fs.FS, doc map[string]any) {
	allowedTop := []string{"name", "services", "volumes", "networks", "configs", "secrets"}
	for k := range doc {
		if !slices.Contains(allowedTop, k) && !strings.HasPrefix(k, "x-") {
			c.fail("compose.yaml: unknown top-level key %q", k)
		}
	}
	if _, ok := doc["version"]; ok {
		c.fail("compose.yaml: obsolete top-level key version")
	}
	services, ok := doc["services"].(map[string]any)
	if !ok {
		c.fail("compose.yaml: services is missing or not a mapping")
		return
	}
	volumes, _ := doc["volumes"].(map[string]any)
	for _, want := range []string{"salt-master", "salt-minion"} {
		if _, ok := services[want]; !ok {
			c.fail("compose.yaml: service %s is missing", want)
		}
	}
	for _, name := range sortedKeys(services) {
		svc, ok := services[name].(map[string]any)
		if !ok {
			c.fail("compose.yaml: service %s is not a mapping", name)
			continue
		}
		c.service(dir, name, svc, services, volumes)
	}
	if m, ok := services["salt-master"].(map[string]any); ok {
		c.masterService(m)
	}
	if m, ok := services["salt-minion"].(map[string]any); ok {
		if !mountsAt(m, "/etc/salt/minion.d/oduflow.conf") {
			c.fail("compose.yaml: salt-minion does not mount minion.d/oduflow.conf")
		}
	}
}

func (c *checker) service(dir fs.FS, name string, svc, services, volumes map[string]any) {
	image, _ := svc["image"].(string)
	if image == "" {
		c.fail("compose.yaml: service %s has no image", name)
	}
	if strings.HasPrefix(name, "salt-") && !strings.Contains(image, "3006") {
		c.fail("compose.yaml: service %s image %q is not Salt 3006", name, image)
	}
	switch dep := svc["depends_on"].(type) {
	case nil:
	case map[string]any:
		for d := range dep {
			if _, ok := services[d]; !ok {
				c.fail("compose.yaml: service %s depends on unknown service %s", name, d)
			}
		}
	case []any:
		for _, d := range dep {
			if s, _ := d.(string); services[s] == nil {
				c.fail("compose.yaml: service %s depends on unknown service %v", name, d)
			}
		}
	default:
		c.fail("compose.yaml: service %s depends_on has the wrong type", name)
	}
	vols, _ := svc["volumes"].([]any)
	for i, v := range vols {
		m, ok := v.(map[string]any)
		if !ok {
			c.fail("compose.yaml: service %s volume %d: use the long syntax (type, source, target)", name, i)
			continue
		}
		typ, _ := m["type"].(string)
		src, _ := m["source"].(string)
		tgt, _ := m["target"].(string)
		if !strings.HasPrefix(tgt, "/") {
			c.fail("compose.yaml: service %s volume %d: target %q is not absolute", name, i, tgt)
		}
		switch typ {
		case "volume":
			if _, ok := volumes[src]; !ok {
				c.fail("compose.yaml: service %s uses undeclared volume %q", name, src)
			}
		case "bind":
			create := false
			if b, ok := m["bind"].(map[string]any); ok {
				create, _ = b["create_host_path"].(bool)
			}
			if create || src == "../.." {
				continue
			}
			if _, err := fs.Stat(dir, path.Clean(strings.TrimPrefix(src, "./"))); err != nil {
				c.fail("compose.yaml: service %s bind source %q does not exist", name, src)
			}
		default:
			c.fail("compose.yaml: service %s volume %d: unknown type %q", name, i, typ)
		}
	}
}

// labPorts are the host ports of the Salt labs that run beside the harness on the developers'
// machines (3006.0 A and B, the later Salt A and B): the harness must publish elsewhere.
var labPorts = []string{"4505", "4506", "4605", "4606", "4705", "4706", "4805", "4806"}

func (c *checker) masterService(m map[string]any) {
	for _, tgt := range []string{"/etc/salt/master.d/oduflow.conf", "/var/run/salt/master", "/var/cache/salt/master", "/etc/salt/pki/master"} {
		if !mountsAt(m, tgt) {
			c.fail("compose.yaml: salt-master mounts nothing at %s", tgt)
		}
	}
	if !mountsAt(m, "/srv/salt") && (!mountsAt(m, "/srv/salt/_modules") || !mountsAt(m, "/srv/salt/roles")) {
		c.fail("compose.yaml: salt-master mounts no file roots (/srv/salt, or /srv/salt/_modules and /srv/salt/roles)")
	}
	ports, _ := m["ports"].([]any)
	found := false
	for _, p := range ports {
		s, _ := p.(string)
		parts := strings.Split(s, ":")
		if len(parts) != 3 || parts[0] != "127.0.0.1" {
			c.fail("compose.yaml: salt-master port %q is not bound to the host's loopback (want 127.0.0.1:HOST:CONTAINER)", s)
			continue
		}
		if slices.Contains(labPorts, parts[1]) {
			c.fail("compose.yaml: salt-master publishes host port %s, which the Salt labs use (%s); choose another (e.g. 14506)", parts[1], strings.Join(labPorts, ", "))
		}
		if parts[2] == "4506" {
			found = true
			c.masterHostPort = parts[1]
		}
	}
	if !found {
		c.fail("compose.yaml: salt-master does not publish its request port 4506 on 127.0.0.1")
	}
	c.masterRun, _ = bindSource(m, "/var/run/salt/master")
	c.masterCache, _ = bindSource(m, "/var/cache/salt/master")
}

// bindSource is the host path bind-mounted at target, without a leading "./".
func bindSource(svc map[string]any, target string) (string, bool) {
	vols, _ := svc["volumes"].([]any)
	for _, v := range vols {
		if m, ok := v.(map[string]any); ok && m["target"] == target && m["type"] == "bind" {
			src, _ := m["source"].(string)
			return path.Clean(strings.TrimPrefix(src, "./")), src != ""
		}
	}
	return "", false
}

func mountsAt(svc map[string]any, target string) bool {
	vols, _ := svc["volumes"].([]any)
	for _, v := range vols {
		if m, ok := v.(map[string]any); ok && m["target"] == target {
			return true
		}
	}
	return false
}

func (c *checker) master(m map[string]any) {
	for _, k := range []string{"job_cache", "pillar_cache"} {
		if v, ok := m[k].(bool); !ok || v {
			c.fail("master.d/oduflow.conf: %s must be False", k)
		}
	}
	for _, k := range []string{"master_job_cache", "ext_job_cache", "event_return", "master_returner"} {
		if _, ok := m[k]; ok {
			c.fail("master.d/oduflow.conf: %s must not be set", k)
		}
	}
	if roots, ok := m["file_roots"].(map[string]any); !ok || !slices.Contains(toStrings(roots["base"]), "/srv/salt") {
		c.fail("master.d/oduflow.conf: file_roots base must include /srv/salt")
	}
	ea, ok := m["external_auth"].(map[string]any)
	if !ok || len(ea) == 0 {
		c.fail("master.d/oduflow.conf: external_auth is missing")
		return
	}
	for _, backend := range sortedKeys(ea) {
		b, _ := ea[backend].(map[string]any)
		acl, ok := b["oduflow"].([]any)
		if !ok {
			c.fail("master.d/oduflow.conf: external_auth.%s has no ACL for user oduflow", backend)
			continue
		}
		c.acl(backend, acl)
	}
}

// acl accepts exactly: client-* -> oduflow_job.* and test.ping, plus optional @runner/@wheel
// entries (whole, or limited to listed functions) for the salt package's tests.
func (c *checker) acl(backend string, acl []any) {
	sawClients := false
	for _, entry := range acl {
		switch e := entry.(type) {
		case string:
			if e != "@runner" && e != "@wheel" {
				c.fail("master.d/oduflow.conf: external_auth.%s.oduflow allows %q", backend, e)
			}
		case map[string]any:
			for target, funs := range e {
				if target == "@runner" || target == "@wheel" {
					if len(toStrings(funs)) == 0 {
						c.fail("master.d/oduflow.conf: external_auth.%s.oduflow %s lists no function", backend, target)
					}
					continue
				}
				if target != "client-*" {
					c.fail("master.d/oduflow.conf: external_auth.%s.oduflow targets %q, want only client-*", backend, target)
					continue
				}
				sawClients = true
				got := toStrings(funs)
				sort.Strings(got)
				if !slices.Equal(got, []string{"oduflow_job.*", "test.ping"}) {
					c.fail("master.d/oduflow.conf: external_auth.%s.oduflow on client-* allows %v, want exactly [oduflow_job.* test.ping]", backend, got)
				}
			}
		default:
			c.fail("master.d/oduflow.conf: external_auth.%s.oduflow has an entry of the wrong type", backend)
		}
	}
	if !sawClients {
		c.fail("master.d/oduflow.conf: external_auth.%s.oduflow has no client-* entry", backend)
	}
}

func (c *checker) minion(m map[string]any, env map[string]string) {
	id, _ := m["id"].(string)
	if !minionIDRe.MatchString(id) {
		c.fail("minion.d/oduflow.conf: id %q is not client-<canonical lowercase UUID>", id)
	}
	if env["ODUFLOW_SALT_MINION"] != id {
		c.fail("harness.env: ODUFLOW_SALT_MINION %q is not the minion id %q", env["ODUFLOW_SALT_MINION"], id)
	}
	if mp, ok := m["multiprocessing"]; ok && mp != true {
		c.fail("minion.d/oduflow.conf: multiprocessing must be True (oduflow_job refuses False)")
	}
	if m["master"] != "salt-master" {
		c.fail("minion.d/oduflow.conf: master must be salt-master (the compose service)")
	}
}

func (c *checker) env(env, users map[string]string) {
	for _, k := range envKeys {
		if env[k] == "" {
			c.fail("harness.env: %s is missing", k)
		}
	}
	if m := env["ODUFLOW_SALT_MASTER"]; m != "" && !strings.HasPrefix(m, "tcp://") {
		c.fail("harness.env: ODUFLOW_SALT_MASTER %q is not tcp://host:port", m)
	} else if want := "tcp://127.0.0.1:" + c.masterHostPort; m != "" && c.masterHostPort != "" && m != want {
		c.fail("harness.env: ODUFLOW_SALT_MASTER %q is not the port compose.yaml publishes (%s)", m, want)
	}
	if want := "unix://${HARNESS_DIR}/" + c.masterRun + "/master_event_pub.ipc"; c.masterRun != "" &&
		strings.HasPrefix(env["ODUFLOW_SALT_EVENTS"], "unix://") && env["ODUFLOW_SALT_EVENTS"] != want {
		c.fail("harness.env: ODUFLOW_SALT_EVENTS %q is not the event bus compose.yaml bind-mounts (%s)", env["ODUFLOW_SALT_EVENTS"], want)
	}
	if want := "${HARNESS_DIR}/" + c.masterCache + "/.root_key"; c.masterCache != "" && env["ODUFLOW_SALT_KEY_FILE"] != want {
		c.fail("harness.env: ODUFLOW_SALT_KEY_FILE %q is not the root key compose.yaml bind-mounts (%s)", env["ODUFLOW_SALT_KEY_FILE"], want)
	}
	if e := env["ODUFLOW_SALT_EVENTS"]; e != "" && !strings.HasPrefix(e, "unix://") && !strings.HasPrefix(e, "tcp://") {
		c.fail("harness.env: ODUFLOW_SALT_EVENTS %q is neither unix:// nor tcp://", e)
	}
	if u := env["ODUFLOW_SALT_USER"]; u != "" {
		if p, ok := users[u]; !ok || p != env["ODUFLOW_SALT_PASSWORD"] {
			// never print the password itself
			c.fail("harness.env: ODUFLOW_SALT_PASSWORD does not match eauth_users.txt for user %s", u)
		}
	}
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
