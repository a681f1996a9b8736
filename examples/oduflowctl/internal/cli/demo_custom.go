package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

// demoSource is the custom state of the demo: plain YAML, full function names, lists of
// single-key arguments.
const demoSource = `# A custom state: plain YAML, no Jinja, full Salt function names.
motd_banner:
  file.managed:
    - name: /etc/motd
    - contents: "Managed by oduflow\n"
    - mode: "0644"

app_ready:
  test.succeed_without_changes:
    - name: application ready
`

func (dm *demo) custom(ctx context.Context) error {
	dm.step(6, "custom state: YAML -> validate -> digest -> apply")
	if err := profiles.ValidateCustom([]byte(demoSource)); err != nil {
		return err
	}
	c, err := profiles.CompileCustom([]byte(demoSource))
	if err != nil {
		return err
	}
	dm.say("validated without executing anything; %d states compiled to Salt high data", len(c.HighData))
	dm.say("digest (SHA-256 of its RFC 8785 canonical JSON) %s", c.Digest)
	def, err := dm.cat.CreateDefinition(ctx, "demo-company", "motd banner", []byte(demoSource))
	if err != nil {
		return err
	}
	if _, err := dm.cat.Assign(ctx, def.ID, dm.minion, "demo-company"); err != nil {
		return err
	}
	dm.say("definition %s revision %d assigned to the server (it has a succeeded configure: step 2)", def.ID, def.Revision)
	request := receipt.NewRequestID()
	r, err := dm.d.CustomStart(ctx, dm.minion, request, def.ID, catalog.ModeApply)
	if err != nil {
		return err
	}
	dm.requests++
	dm.say("custom start -> %s, jid %s: source, revision, digest, server and request frozen; state.high of exactly that payload",
		r.Status, deref(r.JID))
	r, err = dm.followCustom(ctx, request)
	if err != nil {
		return err
	}
	dm.say("custom status -> %s", asJSON(r))
	if r.Status != receipt.StatusSucceeded {
		return fmt.Errorf("demo: expected succeeded, got %s", r.Status)
	}
	return nil
}

func (dm *demo) followCustom(ctx context.Context, request string) (oduflow.CustomResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		r, err := dm.d.CustomStatus(ctx, dm.minion, request)
		if err != nil || r.Status.Terminal() || r.Status == receipt.StatusUnknown {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("demo: waiting for the custom execution: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
