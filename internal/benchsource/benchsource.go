// Package benchsource builds the custom-state source the benchmarks compile: the profiles package's own
// benchmark and the CPU row of bench.sh use the same bytes, so their numbers compare.
package benchsource

import (
	"fmt"
	"strings"
)

// SLS is a realistic source of exactly size bytes with ids state ids: file, package, service and command
// declarations with requisites, names, nested values and block scalars, padded by a comment. An error
// says the ids do not fit in size.
func SLS(size, ids int) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# benchmark source: %d state ids, %d KiB\n", ids, size>>10)
	for i := range ids {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "app_%03d_pkg:\n  pkg.installed:\n    - names:\n      - tool-%03d-a\n      - tool-%03d-b\n    - refresh: false\n", i, i, i)
		case 1:
			fmt.Fprintf(&b, "/etc/app/%03d.conf:\n  file.managed:\n    - user: root\n    - group: app\n    - mode: \"0640\"\n"+
				"    - makedirs: true\n    - contents: |\n        # generated %03d\n        listen = 127.0.0.1:%d\n        workers = %d\n"+
				"        timeout = %d.5\n    - require:\n      - pkg: app_%03d_pkg\n", i, i, 8000+i, i%16+1, i, i-1)
		case 2:
			fmt.Fprintf(&b, "app_%03d_service:\n  service.running:\n    - name: app-%03d\n    - enable: true\n    - reload: true\n"+
				"    - watch:\n      - file: /etc/app/%03d.conf\n  cmd.run:\n    - name: /usr/local/bin/check %03d --strict\n"+
				"    - onchanges:\n      - file: /etc/app/%03d.conf\n", i, i, i-1, i, i-1)
		case 3:
			fmt.Fprintf(&b, "/etc/app/%03d.json:\n  file.serialize:\n    - serializer: json\n    - dataset:\n        id: %d\n"+
				"        tags: [alpha, beta, \"gamma %03d\"]\n        limits: {cpu: 1.5, memory: 512, burst: null}\n"+
				"        peers:\n          - {host: peer-a, port: 7000}\n          - {host: peer-b, port: 7001}\n", i, i, i)
		}
	}
	for b.Len() < size-80 {
		b.WriteString("# padding padding padding padding padding padding padding padding padding\n")
	}
	if pad := size - b.Len() - 3; pad >= 0 {
		b.WriteString("# " + strings.Repeat("-", pad) + "\n")
	}
	if b.Len() != size {
		return nil, fmt.Errorf("benchsource: %d ids make %d bytes, over %d", ids, b.Len(), size)
	}
	return []byte(b.String()), nil
}
