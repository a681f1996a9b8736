package salt

import (
	"encoding/base64"
	"fmt"
)

func fmtV(v any) string { return fmt.Sprintf("%v %+v %#v %s", v, v, v, v) }

// testUserKey is a well-formed Salt user key (76 base64 characters of 56 bytes) derived from seed,
// so that tests can tell keys apart by name.
func testUserKey(seed string) string {
	b := make([]byte, userKeyBytes)
	copy(b, seed)
	return base64.StdEncoding.EncodeToString(b)
}
