package salt

import (
	"fmt"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// Sentinel errors. Test with errors.Is; every error the package returns wraps
// at least one of them.
var (
	// ErrEventBusPermission: the event bus's unix socket refused this process
	// (see EventBusPermissionError).
	ErrEventBusPermission = errors.New("salt: permission denied on the event bus socket")
	// ErrNotSent: the request definitely did not leave this process (bad
	// address, dial or ZMTP handshake failure, unreadable key file, context
	// done before sending). Nothing was executed.
	ErrNotSent = errors.New("salt: request not sent")
	// ErrOutcomeUnknown: the request was sent, or may have been, and no
	// usable reply arrived (timeout, context cancelled, connection lost,
	// reply too large or undecodable). A publish may have happened and may
	// still happen later: never resend it blindly.
	ErrOutcomeUnknown = errors.New("salt: request outcome unknown")
	// ErrNoMinions: the master matched no minion; nothing was published.
	ErrNoMinions = errors.New("salt: no minions matched the target")
	// ErrAuthentication: the master rejected the credentials (user key,
	// eauth password, token), or mk_token failed.
	ErrAuthentication = errors.New("salt: authentication failed")
	// ErrAuthorization: the credentials are valid but the ACL does not allow
	// the function or target (or the user is blacklisted).
	ErrAuthorization = errors.New("salt: authorization failed")
	// ErrBadLoad: the master answered "bad load": it did not process the
	// request (undecodable request, or envelope version below the master's
	// minimum_auth_version, which release notes of 3006.17+ describe).
	ErrBadLoad = errors.New("salt: master replied bad load")
	// ErrMasterException: the master answered "Some exception handling minion
	// payload": nothing was published (but job events may have been fired).
	ErrMasterException = errors.New("salt: master raised an exception handling the request")
	// ErrMasterError: any other {error: {name, message}} reply (see MasterError).
	ErrMasterError = errors.New("salt: master returned an error")
	// ErrMalformedReply: the reply could not be understood.
	ErrMalformedReply = errors.New("salt: malformed reply")
	// ErrLimitExceeded: a reply or an event frame exceeded its Limits (wire
	// size, decoded values, estimated decoded bytes, nesting). A reply
	// beyond them comes with ErrOutcomeUnknown (and ErrMalformedReply when
	// its decoding was refused); an event frame beyond them becomes a Gap
	// whose Err is it.
	ErrLimitExceeded = errors.New("salt: message exceeds a configured limit")
	// ErrInvalidJID: not exactly 20 ASCII digits.
	ErrInvalidJID = errors.New("salt: invalid JID")
	// ErrInvalidRequest: the request was refused locally before any I/O.
	ErrInvalidRequest = errors.New("salt: invalid request")
	// ErrKeyFile: the user key file is missing, unsafe or unreadable.
	ErrKeyFile = errors.New("salt: cannot use key file")
	// ErrClosed: the Client or EventStream was closed.
	ErrClosed = errors.New("salt: closed")
	// ErrBusStalled: the Err of a "bus stalled" Gap: the connection to the
	// event bus is open, but no event at all arrived within the time a caller
	// expected one (EventStream.ExpectEvents, e.g. after a publish the master
	// acknowledged: the master fires salt/job/<jid>/new for each). On Salt
	// 3007+ one subscriber that stops reading blocks the master's event
	// publisher for every reader: returns and status replies stop arriving.
	ErrBusStalled = errors.New("salt: event bus stalled: nothing arrived while events were expected")
)

// limitError is one specific limit (reply size, frame size, decode budget);
// each matches ErrLimitExceeded, and this package's tests tell them apart.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// Is reports ErrLimitExceeded.
func (e *limitError) Is(target error) bool { return target == ErrLimitExceeded }

// MasterError is an {error: {name, message}} reply from the master. Name is
// Salt's exception class (AuthenticationError, AuthorizationError,
// EauthAuthenticationError, SaltInvocationError, ...). Message is the master's
// text; Salt never puts credentials in it.
type MasterError struct {
	Name    string
	Message string
}

func (e *MasterError) Error() string {
	return fmt.Sprintf("salt: master error %s: %s", e.Name, e.Message)
}

// redactableMasterError carries a *MasterError through this package's
// redacted logs (errors.Redact): the exception name visible, the master's
// message redacted. It keeps cockroachdb's Printer off the public type;
// errors.As still finds the *MasterError.
type redactableMasterError struct{ e *MasterError }

func (w *redactableMasterError) Error() string { return w.e.Error() }

// Unwrap exposes the *MasterError (and through its Is, the sentinels).
func (w *redactableMasterError) Unwrap() error { return w.e }

// SafeFormatError prints the exception name as safe and the message as unsafe.
func (w *redactableMasterError) SafeFormatError(p errors.Printer) error {
	p.Printf("salt: master error %s: %s", redact.Safe(w.e.Name), w.e.Message)
	return nil
}

// masterError is the error of an {error: {name, message}} reply.
func masterError(name, message string) error {
	return &redactableMasterError{&MasterError{Name: name, Message: message}}
}

// Is maps the exception name onto ErrAuthentication / ErrAuthorization /
// ErrMasterError.
func (e *MasterError) Is(target error) bool {
	switch target {
	case ErrAuthentication:
		return isAuthenticationName(e.Name)
	case ErrAuthorization:
		return e.Name == "AuthorizationError"
	case ErrMasterError:
		return true
	}
	return false
}

func isAuthenticationName(n string) bool {
	switch n {
	case "AuthenticationError", "EauthAuthenticationError", "TokenAuthenticationError", "UserAuthenticationError":
		return true
	}
	return false
}

// noMinionsError is the publish reply {jid: nil, minions: [], error: ...}.
type noMinionsError struct {
	Message string
}

func (e *noMinionsError) Error() string { return "salt: no minions: " + e.Message }

// Is reports ErrNoMinions.
func (e *noMinionsError) Is(target error) bool { return target == ErrNoMinions }

// IsNotPublished reports whether err proves that nothing was published: the
// request was not sent, or the master's reply says it refused it
// (authentication, authorization, no minions, bad load, master exception,
// any other error map).
func IsNotPublished(err error) bool {
	if err == nil || IsOutcomeUnknown(err) {
		return false
	}
	for _, s := range []error{ErrNotSent, ErrAuthentication, ErrAuthorization, ErrNoMinions,
		ErrBadLoad, ErrMasterException, ErrMasterError} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// IsOutcomeUnknown reports whether the request may or may not have been
// executed (ErrOutcomeUnknown).
func IsOutcomeUnknown(err error) bool { return errors.Is(err, ErrOutcomeUnknown) }

// notSent marks cause as ErrNotSent.
func notSent(cause error, what string) error {
	return errmark.Mark(errors.Wrapf(cause, "salt: %s (request not sent)", errors.Safe(what)), ErrNotSent)
}

// outcomeUnknown marks cause as ErrOutcomeUnknown.
func outcomeUnknown(cause error, what string) error {
	return errmark.Mark(errors.Wrapf(cause, "salt: %s (request sent, outcome unknown)", errors.Safe(what)), ErrOutcomeUnknown)
}

// replyMismatchError is a publish acknowledgement that does not match the request: the JID
// differs from the preassigned one, or the minions of a list target are not exactly the target.
// Something was published, perhaps not what was asked (a confused or hostile master, a reply
// meant for another request): the outcome is unknown (Is(ErrOutcomeUnknown)), never "dispatched".
type replyMismatchError struct {
	Field string // "jid" or "minions"
	Want  string // the request's value (JID, or the target ids)
	Got   string // the reply's value
}

func (e *replyMismatchError) Error() string {
	return fmt.Sprintf("salt: publish reply %s mismatch: want %s, got %s", e.Field, e.Want, e.Got)
}

// SafeFormatError keeps the field name visible and the master-chosen values redactable.
func (e *replyMismatchError) SafeFormatError(p errors.Printer) error {
	p.Printf("salt: publish reply %s mismatch: want %s, got %s", redact.Safe(e.Field), e.Want, e.Got)
	return nil
}

// Is reports ErrOutcomeUnknown.
func (e *replyMismatchError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Unexported causes, each wrapped or matched by an exported sentinel above (the limit errors match
// ErrLimitExceeded; the others are wrapped into ErrMalformedReply, ErrNotSent, ErrOutcomeUnknown or
// a Gap's Err by the layer that meets them). The tests tell them apart.
var (
	// errReplyTooLarge: the reply exceeded Limits.MaxMessageBytes.
	errReplyTooLarge error = &limitError{"salt: reply too large"}

	// errMsgpack is the sentinel of every decoding failure of msgpack data (the wire's own:
	// the decoder in internal/saltwire returns it).
	errMsgpack = saltwire.ErrMsgpack

	// errUnsupportedType is returned by the encoder for Go values that have no
	// msgpack form in Salt's dialect (channels, functions, structs, ...).
	errUnsupportedType = saltwire.ErrUnsupportedType

	// errProtocol is the cause of ZMTP protocol violations by the peer.
	errProtocol = saltwire.ErrProtocol

	// errFrameTimeout: an event frame had started but did not complete within
	// WithFrameTimeout; the connection is dropped (a Gap whose Err is this).
	errFrameTimeout = errors.New("salt: event frame not completed in time")

	// errFrameTooLarge: an event frame exceeded Limits.MaxMessageBytes, or a length
	// prefix was zero or implausible (ErrLimitExceeded). The connection is dropped
	// and re-opened.
	errFrameTooLarge error = &limitError{"salt: event frame too large or invalid length"}

	// errDecodeBudget: a msgpack document would cost more to decode than its decodeLimits allow
	// (values, estimated bytes, nesting). It is ErrLimitExceeded and also errMsgpack; a reply that
	// exceeds it is also ErrMalformedReply (and ErrOutcomeUnknown for a publish); an event that
	// exceeds it becomes a Gap.
	errDecodeBudget error = &limitError{"salt: msgpack document exceeds the decode budget"}
)
