package profiles

import (
	"strings"
	"testing"
)

// The digests below were computed independently in Python from Salt's own
// rendering (testdata/saltref/README.md: Salt's own loader, normalized, then
// json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False), which
// equals RFC 8785 for data without floats or astral-plane keys) and sha256.
func TestDigestPinnedAgainstPython(t *testing.T) {
	for name, want := range map[string]string{
		"basic_pkg":          "482e331ad06fc069484baecb17770362d99039d513d5cd787b73e35e632cbc20",
		"two_modules_one_id": "448def064957545c43bbe47d9fbfb17b33710942b5c6de85016cee20435c933a",
		"unicode":            "23d0eecd627e1cf321c166611f80580f8573428048056be2830a554c484e7379",
	} {
		c, err := CompileCustom(mustRead(t, "testdata/custom/accept/"+name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Digest != want {
			t.Errorf("%s: digest %s, want %s (canonical %s)", name, c.Digest, want, c.Canonical)
		}
	}
	c, err := CompileCustom(mustRead(t, "testdata/custom/accept/basic_pkg.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const canon = `{"nginx":{"__env__":"base","__sls__":"oduflow.custom","pkg":["installed",{"name":"nginx"},{"order":10000}]}}`
	if string(c.Canonical) != canon {
		t.Errorf("canonical %s\nwant      %s", c.Canonical, canon)
	}
}

const digestBase = `# web server
nginx:
  pkg.installed:
    - name: nginx
    - version: "1.24"
  service.running:
    - enable: true
    - reload: true
    - watch:
      - file: /etc/nginx/nginx.conf
/etc/nginx/nginx.conf:
  file.managed:
    - source: salt://nginx/files/nginx.conf
    - mode: "0644"
    - defaults:
        workers: 4
        listen: [80, 443]
        tls: {enabled: true, protocols: [TLSv1.2, TLSv1.3]}
`

// Variants with the same meaning: the digest must not move.
var sameMeaning = map[string]string{
	"comments": `# a different comment
nginx:   # the id
  pkg.installed:
    - name: nginx      # name
    - version: "1.24"
  # between functions
  service.running:
    - enable: true
    - reload: true
    - watch:
      - file: /etc/nginx/nginx.conf
/etc/nginx/nginx.conf:
  file.managed:
    - source: salt://nginx/files/nginx.conf
    - mode: "0644"
    - defaults:
        workers: 4
        listen: [80, 443]
        tls: {enabled: true, protocols: [TLSv1.2, TLSv1.3]}
# end
`,
	"argument_order": `nginx:
  pkg.installed:
    - version: "1.24"
    - name: nginx
  service.running:
    - watch:
      - file: /etc/nginx/nginx.conf
    - reload: true
    - enable: true
/etc/nginx/nginx.conf:
  file.managed:
    - defaults:
        tls: {protocols: [TLSv1.2, TLSv1.3], enabled: true}
        listen: [80, 443]
        workers: 4
    - mode: "0644"
    - source: salt://nginx/files/nginx.conf
`,
	"flow_style": `{nginx: {pkg.installed: [{name: nginx}, {version: "1.24"}], service.running: [{enable: true}, {reload: true}, {watch: [{file: /etc/nginx/nginx.conf}]}]}, /etc/nginx/nginx.conf: {file.managed: [{source: "salt://nginx/files/nginx.conf"}, {mode: "0644"}, {defaults: {workers: 4, listen: [80, 443], tls: {enabled: true, protocols: [TLSv1.2, TLSv1.3]}}}]}}
`,
	"quoting_and_indent": `"nginx":
    'pkg.installed':
    -   name: "nginx"
    -   version: '1.24'
    service.running:
    -   "enable": true
    -   reload: TRUE
    -   watch:
        -   file: '/etc/nginx/nginx.conf'
'/etc/nginx/nginx.conf':
    file.managed:
    -   source: "salt://nginx/files/nginx.conf"
    -   mode: '0644'
    -   defaults:
            workers: 4
            listen:
            - 80
            - 443
            tls:
                enabled: True
                protocols:
                - "TLSv1.2"
                - TLSv1.3
`,
	"block_scalars": "nginx:\n  pkg.installed:\n    - name: >-\n        nginx\n    - version: |-\n        1.24\n" +
		strings.Join(strings.Split(digestBase, "\n")[5:], "\n"),
	"document_markers_crlf_bom": "\ufeff---\r\n" + strings.ReplaceAll(digestBase, "\n", "\r\n") + "...\r\n",
}

// Variants with a different meaning: the digest must move.
var otherMeaning = map[string]string{
	"value":         strings.Replace(digestBase, `"1.24"`, `"1.25"`, 1),
	"int_vs_string": strings.Replace(digestBase, "workers: 4", `workers: "4"`, 1),
	"bool_vs_str":   strings.Replace(digestBase, "reload: true", `reload: "true"`, 1),
	"function":      strings.Replace(digestBase, "pkg.installed", "pkg.latest", 1),
	"id":            strings.Replace(digestBase, "nginx:\n", "web:\n", 1),
	"requisite":     strings.Replace(digestBase, "- watch:", "- require:", 1),
	"extra_arg":     strings.Replace(digestBase, "    - reload: true\n", "    - reload: true\n    - sig: nginx\n", 1),
	"list_order":    strings.Replace(digestBase, "[80, 443]", "[443, 80]", 1),
	"explicit_order": strings.Replace(digestBase, "    - name: nginx\n",
		"    - name: nginx\n    - order: 10000\n", 1),
	// Salt gives implicit orders in source order (state_auto_order), so the
	// order of ids and of functions within an id is meaning, not format.
	"id_order": `/etc/nginx/nginx.conf:
  file.managed:
    - source: salt://nginx/files/nginx.conf
    - mode: "0644"
    - defaults:
        workers: 4
        listen: [80, 443]
        tls: {enabled: true, protocols: [TLSv1.2, TLSv1.3]}
nginx:
  pkg.installed:
    - name: nginx
    - version: "1.24"
  service.running:
    - enable: true
    - reload: true
    - watch:
      - file: /etc/nginx/nginx.conf
`,
	"function_order": `nginx:
  service.running:
    - enable: true
    - reload: true
    - watch:
      - file: /etc/nginx/nginx.conf
  pkg.installed:
    - name: nginx
    - version: "1.24"
` + strings.Join(strings.Split(digestBase, "\n")[10:], "\n"),
	"trailing_space_in_string": strings.Replace(digestBase, `"1.24"`, `"1.24 "`, 1),
}

func TestDigestStability(t *testing.T) {
	base, err := CompileCustom([]byte(digestBase))
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range sameMeaning {
		c, err := CompileCustom([]byte(src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if c.Digest != base.Digest {
			t.Errorf("%s: digest changed\n got %s\nwant %s", name, c.Canonical, base.Canonical)
		}
	}
	seen := map[string]string{base.Digest: "base"}
	for name, src := range otherMeaning {
		if src == digestBase {
			t.Fatalf("%s: the variant did not change the source", name)
		}
		c, err := CompileCustom([]byte(src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if prev, dup := seen[c.Digest]; dup {
			t.Errorf("%s: same digest as %s: %s", name, prev, c.Canonical)
		}
		seen[c.Digest] = name
	}
}

func TestCompileIsDeterministic(t *testing.T) {
	src := mustRead(t, "testdata/custom/accept/requisites_all.yaml")
	first, err := CompileCustom(src)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		c, err := CompileCustom(src)
		if err != nil || c.Digest != first.Digest || string(c.Canonical) != string(first.Canonical) {
			t.Fatalf("nondeterministic: %v %s", err, c.Canonical)
		}
	}
}
