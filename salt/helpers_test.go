package salt

import "fmt"

func fmtV(v any) string { return fmt.Sprintf("%v %+v %#v %s", v, v, v, v) }
