package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

// The lab minion's profile table. A lab set up with a host-named minion (saltlab.sh SALTLAB_MINION_ID,
// e.g. web01.lab.example) runs its minion with a profile table whose id policy is "salt"
// ($ODUFLOW_SALTLAB_DIR/etc/minion.d/oduflow_profiles.conf, the oduflow_profiles key written from
// Table.MinionConfig): the default table (seeds) refuses that id before anything is sent, and a
// dispatcher with another table than the minion's fails every request with profile_table_mismatch.
// So the configure row dispatches with the minion's own table, and with a profile of that table.

// labTableFile is where the lab kit's minion reads its profile table from.
func labTableFile(labDir string) string {
	return filepath.Join(labDir, "etc", "minion.d", "oduflow_profiles.conf")
}

// minionTable reads the oduflow_profiles value of a minion config file (one line, the flow mapping
// Table.MinionConfig writes) and parses it. ok is false when the file or the key is absent: the minion
// runs the default table.
func minionTable(path string) (_ *profiles.Table, ok bool, err error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	const key = "oduflow_profiles:"
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, key) {
			continue
		}
		t, err := profiles.ParseTable([]byte(strings.TrimSpace(strings.TrimPrefix(line, key))), path)
		if err != nil {
			return nil, false, err
		}
		return t, true, nil
	}
	if err := sc.Err(); err != nil {
		return nil, false, err
	}
	return nil, false, nil
}

// configureTarget picks the table and profile of the configure row: the lab minion's table when it has
// one (else the default), and want when given, else configure when the table has it, else the table's
// first profile that applies sls files (not a highstate).
func configureTarget(labDir, want string) (*profiles.Table, receipt.Profile, error) {
	t := profiles.DefaultTable()
	if labDir != "" {
		mt, ok, err := minionTable(labTableFile(labDir))
		if err != nil {
			return nil, "", fmt.Errorf("the lab minion's profile table: %w", err)
		}
		if ok {
			t = mt
		}
	}
	if want != "" {
		p := receipt.Profile(want)
		if !t.Has(p) {
			return nil, "", fmt.Errorf("profile %q is not in the lab minion's profile table", want)
		}
		return t, p, nil
	}
	if t.Has(receipt.ProfileConfigure) {
		return t, receipt.ProfileConfigure, nil
	}
	for _, p := range t.Profiles() {
		if _, hs, err := t.States(p); err == nil && !hs {
			return t, p, nil
		}
	}
	return nil, "", fmt.Errorf("the lab minion's profile table has no sls profile")
}
