package service

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/oduflow/oduflow-go/examples/internal/authfile"
)

// MaxAuthFileBytes bounds a token, principal or client bindings file.
const MaxAuthFileBytes = 1 << 20

// readPrivateFile reads a file named by the variable env as package authfile checks every authority
// file: regular, owned by this user or root, not writable by others (no group or world bit at all when
// private), at most MaxAuthFileBytes, opened without blocking within ctx, in directories others cannot
// write. Messages name the variable, never the path.
func readPrivateFile(ctx context.Context, env, path string, private bool) ([]byte, error) {
	b, err := authfile.Read(ctx, env, path, authfile.Options{Private: private, MaxBytes: MaxAuthFileBytes})
	if err != nil {
		return nil, usageError(err.Error())
	}
	return b, nil
}

// fileLine is one meaningful line of an auth file: its number and its fields.
type fileLine struct {
	n      int
	fields []string
}

// lines splits b into lines of fields, leaving out blank lines and # comments (a whole line, or after
// whitespace).
func lines(b []byte) []fileLine {
	var out []fileLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxAuthFileBytes)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if i := strings.Index(text, "#"); i >= 0 && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t') {
			text = text[:i]
		}
		if f := strings.Fields(text); len(f) > 0 {
			out = append(out, fileLine{n: n, fields: f})
		}
	}
	return out
}

// parsePrincipal reads NAME ROLE COMPANY[,COMPANY...] (the first three fields of a line).
func parsePrincipal(env string, l fileLine) (Principal, error) {
	name, role, companies := l.fields[0], l.fields[1], l.fields[2]
	if !validName(name) {
		return Principal{}, lineError(env, l.n, "NAME: want 1-128 letters, digits or . _ - @ :")
	}
	r, ok := parseRole(role)
	if !ok {
		return Principal{}, lineError(env, l.n, "ROLE: want administrator or observer")
	}
	p := Principal{Name: name, Role: r}
	if companies == "*" {
		p.All = true
		return p, nil
	}
	for _, c := range strings.Split(companies, ",") {
		if !validCompany(c) {
			return Principal{}, lineError(env, l.n, "COMPANY: want * or a comma-separated list of 1-128 letters, digits or . _ -")
		}
		if !slices.Contains(p.Companies, c) {
			p.Companies = append(p.Companies, c)
		}
	}
	slices.Sort(p.Companies)
	return p, nil
}

func lineError(env string, n int, msg string) error {
	return usageError(fmt.Sprintf("%s: line %d: %s", env, n, msg))
}

func validName(s string) bool { return validWord(s, "._-@:") }

func validCompany(s string) bool { return validWord(s, "._-") }

func validWord(s, extra string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(extra, r)) {
			return false
		}
	}
	return true
}

// loadPrincipals reads a principal mapping file (ODUFLOW_TLS_PRINCIPALS): lines NAME ROLE COMPANIES.
func loadPrincipals(ctx context.Context, env, path string) (map[string]Principal, error) {
	b, err := readPrivateFile(ctx, env, path, true)
	if err != nil {
		return nil, err
	}
	out := map[string]Principal{}
	for _, l := range lines(b) {
		if len(l.fields) != 3 {
			return nil, lineError(env, l.n, fmt.Sprintf("%d fields: want NAME ROLE COMPANY[,COMPANY...]", len(l.fields)))
		}
		p, err := parsePrincipal(env, l)
		if err != nil {
			return nil, err
		}
		if _, dup := out[p.Name]; dup {
			return nil, lineError(env, l.n, "NAME already on an earlier line")
		}
		out[p.Name] = p
	}
	if len(out) == 0 {
		return nil, usageError(env + ": no principal")
	}
	return out, nil
}
