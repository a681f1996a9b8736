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
	t.Parallel()
	f := MinionModule()
	a := f.Source
	if len(a) == 0 || len(f.ReceiptsState) == 0 || len(f.CloudInit) == 0 || len(f.TestHost) == 0 {
		t.Fatal("empty module file")
	}
	if f.Name != "oduflow_job.py" || f.SaltPath != "salt://_modules/oduflow_job.py" {
		t.Fatalf("name %q, salt path %q", f.Name, f.SaltPath)
	}
	a[0] ^= 0xff
	f.ReceiptsState[0] ^= 0xff
	f.CloudInit[0] ^= 0xff
	f.TestHost[0] ^= 0xff
	g := MinionModule()
	if bytes.Equal(a, g.Source) || bytes.Equal(f.ReceiptsState, g.ReceiptsState) ||
		bytes.Equal(f.CloudInit, g.CloudInit) || bytes.Equal(f.TestHost, g.TestHost) {
		t.Fatal("MinionModule returned shared bytes")
	}
	for _, want := range []string{`__virtualname__ = "oduflow_job"`, "PROTOCOL = 1", "def run(", "def status(", "def capabilities("} {
		if !bytes.Contains(MinionModule().Source, []byte(want)) {
			t.Errorf("module lacks %q", want)
		}
	}
	sum := sha256.Sum256(MinionModule().Source)
	if got := MinionModule().SHA256; got != hex.EncodeToString(sum[:]) {
		t.Fatalf("SHA256 = %s", got)
	}
}

func TestClientReceiptsStateMatchesModule(t *testing.T) {
	t.Parallel()
	sls := string(MinionModule().ReceiptsState)
	if !strings.Contains(sls, "- source: "+MinionModule().SaltPath+"\n") {
		t.Errorf("state does not source %s", MinionModule().SaltPath)
	}
	m := regexp.MustCompile(`(?m)^\s+- source_hash: sha256=([0-9a-f]{64})$`).FindStringSubmatch(sls)
	if m == nil {
		t.Fatal("state has no sha256 source_hash")
	}
	if m[1] != MinionModule().SHA256 {
		t.Fatalf("client_receipts.sls source_hash %s != module sha256 %s (run python3 receipt/minion/bootstrap/render.py)",
			m[1], MinionModule().SHA256)
	}
	for _, want := range []string{"file.managed:", "/modules/oduflow_job.py", "saltutil.sync_modules:", "onchanges:"} {
		if !strings.Contains(sls, want) {
			t.Errorf("state lacks %q", want)
		}
	}
}

func TestCloudInitCarriesModule(t *testing.T) {
	t.Parallel()
	ci := string(MinionModule().CloudInit)
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
	if !bytes.Equal(got, MinionModule().Source) {
		t.Fatal("cloud-init content differs from the module (run python3 receipt/minion/bootstrap/render.py)")
	}
	if !strings.Contains(ci, MinionModule().SHA256) {
		t.Error("snippet comment does not name the module sha256")
	}
}

func TestMinionTestHostEmbedded(t *testing.T) {
	t.Parallel()
	if !bytes.Contains(MinionModule().TestHost, []byte("def serve(")) {
		t.Fatal("host.py not embedded")
	}
}
