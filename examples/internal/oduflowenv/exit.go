package oduflowenv

// Exit statuses of the example programs (oduflowctl's exit status; the controller's JSON errors carry the
// same number and name). A caller decides from them alone whether it may start a new request.
const (
	ExitOK           = 0 // succeeded, or done (also running or not_started without --wait)
	ExitFailed       = 1 // failed: a known terminal failure; a new request may follow
	ExitUsage        = 2 // bad input or configuration (credentials, directories, flags); nothing written
	ExitUnreachable  = 3 // master, event bus or claim store unreachable; nothing written
	ExitRefused      = 4 // refused by the master (authentication, authorization)
	ExitUnknown      = 5 // outcome not proven: never start a replacement; reconcile
	ExitDamaged      = 6 // damaged or missing claim store (or catalog record)
	ExitStillRunning = 7 // still running when --wait timed out; the request goes on
)

// ExitName is the name of an exit status ("usage", "unreachable", ...), as the controller's JSON errors
// carry it; "" for a number that is none of them.
func ExitName(code int) string {
	switch code {
	case ExitOK:
		return "ok"
	case ExitFailed:
		return "failed"
	case ExitUsage:
		return "usage"
	case ExitUnreachable:
		return "unreachable"
	case ExitRefused:
		return "refused"
	case ExitUnknown:
		return "unknown"
	case ExitDamaged:
		return "damaged"
	case ExitStillRunning:
		return "still_running"
	}
	return ""
}
