package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

func TestMinionModuleIsACopy(t *testing.T) {
	a := MinionModule()
	if len(a) == 0 {
		t.Fatal("empty module")
	}
	a[0] ^= 0xff
	if bytes.Equal(a, MinionModule()) {
		t.Fatal("MinionModule returned shared bytes")
	}
	for _, want := range []string{`__virtualname__ = "oduflow_job"`, "PROTOCOL = 1", "def run(", "def status(", "def capabilities("} {
		if !bytes.Contains(MinionModule(), []byte(want)) {
			t.Errorf("module lacks %q", want)
		}
	}
	sum := sha256.Sum256(MinionModule())
	if got := MinionModuleSHA256(); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("MinionModuleSHA256 = %s", got)
	}
}

func TestClientReceiptsStateMatchesModule(t *testing.T) {
	sls := string(ClientReceiptsState())
	if !strings.Contains(sls, "- source: "+MinionModuleSaltPath+"\n") {
		t.Errorf("state does not source %s", MinionModuleSaltPath)
	}
	m := regexp.MustCompile(`(?m)^\s+- source_hash: sha256=([0-9a-f]{64})$`).FindStringSubmatch(sls)
	if m == nil {
		t.Fatal("state has no sha256 source_hash")
	}
	if m[1] != MinionModuleSHA256() {
		t.Fatalf("client_receipts.sls source_hash %s != module sha256 %s (run python3 receipt/minion/bootstrap/render.py)",
			m[1], MinionModuleSHA256())
	}
	for _, want := range []string{"file.managed:", "/modules/oduflow_job.py", "saltutil.sync_modules:", "onchanges:"} {
		if !strings.Contains(sls, want) {
			t.Errorf("state lacks %q", want)
		}
	}
}

func TestCloudInitCarriesModule(t *testing.T) {
	ci := string(CloudInitSnippet())
	if !strings.HasPrefix(ci, "#cloud-config\n") {
		t.Error("snippet is not #cloud-config")
	}
	if !strings.Contains(ci, "- path: /var/cache/salt/minion/extmods/modules/oduflow_job.py\n") {
		t.Error("snippet does not write the extension-module path")
	}
	if !strings.Contains(ci, "encoding: b64\n") {
		t.Error("snippet content is not base64")
	}
	_, after, ok := strings.Cut(ci, "content: |\n")
	if !ok {
		t.Fatal("no content block")
	}
	var b64 strings.Builder
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "      ") {
			break
		}
		b64.WriteString(strings.TrimSpace(line))
	}
	got, err := base64.StdEncoding.DecodeString(b64.String())
	if err != nil {
		t.Fatalf("content: %v", err)
	}
	if !bytes.Equal(got, MinionModule()) {
		t.Fatal("cloud-init content differs from the module (run python3 receipt/minion/bootstrap/render.py)")
	}
	if !strings.Contains(ci, MinionModuleSHA256()) {
		t.Error("snippet comment does not name the module sha256")
	}
}

func TestMinionTestHostEmbedded(t *testing.T) {
	if !bytes.Contains(MinionTestHost(), []byte("def serve(")) {
		t.Fatal("host.py not embedded")
	}
}
