package profiles

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// ErrInvalidCustom matches (errors.Is) every *CustomError: a custom state
// source that ValidateCustom or CompileCustom refused.
var ErrInvalidCustom = errors.New("profiles: invalid custom state source")

// ErrorCode is the stable, machine-readable reason a custom source was refused.
// Codes never change meaning; new ones may be added.
type ErrorCode string

// The error codes of *CustomError. The corpus under testdata/custom/reject
// has at least one source for each.
const (
	// Limits and raw text (checked before any YAML parsing).
	CodeTooLarge          ErrorCode = "too_large"          // more than MaxSourceBytes
	CodeInvalidUTF8       ErrorCode = "invalid_utf8"       // not valid UTF-8
	CodeInvalidCharacter  ErrorCode = "invalid_character"  // NUL, control, NEL, U+2028/9, non-leading BOM, ...
	CodeTemplateSyntax    ErrorCode = "template_syntax"    // "{{", "{%" or "{#" anywhere, comments included
	CodeRendererDirective ErrorCode = "renderer_directive" // a line starting with "#!"
	CodeYAMLDirective     ErrorCode = "yaml_directive"     // a %YAML or %TAG directive line
	// YAML structure.
	CodeSyntax            ErrorCode = "yaml_syntax"        // the YAML parser refused the source
	CodeMultipleDocuments ErrorCode = "multiple_documents" // more than one YAML document
	CodeEmptyDocument     ErrorCode = "empty_document"     // nothing, null, or an empty mapping
	CodeNotMapping        ErrorCode = "not_mapping"        // the top level is not a mapping
	CodeAnchor            ErrorCode = "anchor"             // &anchor
	CodeAlias             ErrorCode = "alias"              // *alias
	CodeExplicitTag       ErrorCode = "explicit_tag"       // !tag, !!type, or the non-specific "!"
	CodeMergeKey          ErrorCode = "merge_key"          // a plain "<<"
	CodeDuplicateKey      ErrorCode = "duplicate_key"      // the same key twice in one mapping, any depth
	CodeTooDeep           ErrorCode = "too_deep"           // more than MaxDepth nested collections
	CodeTooManyIDs        ErrorCode = "too_many_ids"       // more than MaxStateIDs state ids
	CodeTooManyItems      ErrorCode = "too_many_items"     // a list or mapping longer than MaxItems
	CodeScalarTooLong     ErrorCode = "scalar_too_long"    // a scalar longer than MaxScalarBytes
	CodeNonStringKey      ErrorCode = "non_string_key"     // a key (id, argument, nested) that is not a string
	CodeAmbiguousScalar   ErrorCode = "ambiguous_scalar"   // a plain scalar YAML 1.1 and 1.2 read differently: quote it
	CodeNumberOutOfRange  ErrorCode = "number_out_of_range"
	// Salt state semantics.
	CodeForbiddenDeclaration ErrorCode = "forbidden_declaration" // include, extend or exclude
	CodeInvalidID            ErrorCode = "invalid_id"            // empty, "__"-reserved, control characters, "_|-"
	CodeInvalidState         ErrorCode = "invalid_state"         // an id whose value is not a declaration mapping
	CodeInvalidFunction      ErrorCode = "invalid_function"      // not a full module.function
	CodeDuplicateModule      ErrorCode = "duplicate_module"      // two functions of one module under one id
	CodeArgumentsNotList     ErrorCode = "arguments_not_list"    // a function whose value is not a list
	CodeInvalidArgument      ErrorCode = "invalid_argument"      // a list item that is not a single-key mapping
	CodeDuplicateArgument    ErrorCode = "duplicate_argument"    // the same argument twice for one function
	CodeReservedArgument     ErrorCode = "reserved_argument"     // fun, state, prerequired, __*
	CodeParallel             ErrorCode = "parallel_forbidden"    // an explicit parallel argument
	CodeInvalidRequisite     ErrorCode = "invalid_requisite"     // a requisite that is not a list of ids or {module: id}
	CodeRequisiteCycle       ErrorCode = "requisite_cycle"       // two ids that require/watch/prereq/onchange each other
	CodeInvalidName          ErrorCode = "invalid_name"          // name that is not a string
	CodeInvalidNames         ErrorCode = "invalid_names"         // names that is not a list of strings or {name: [args]}
	CodeInvalidOrder         ErrorCode = "invalid_order"         // order that is not an integer within ±100000, "first" or "last"
	CodeAmbiguousOrder       ErrorCode = "ambiguous_order"       // explicit orders Salt would break by id order
	CodeNotCanonical         ErrorCode = "not_canonical"         // canonical JSON refused the compiled data (not expected)
)

// CustomError is the error of ValidateCustom and CompileCustom. Line and
// Column are 1-based (Column counts characters); 0 means the whole source or an
// unknown position. Message is fixed text chosen by this package: it never
// contains any part of the source, which may hold secrets.
type CustomError struct {
	Code    ErrorCode
	Message string
	Line    int
	Column  int
}

// Error implements error.
func (e *CustomError) Error() string {
	return fmt.Sprintf("profiles: custom state %s at line %d, column %d: %s", e.Code, e.Line, e.Column, e.Message)
}

// Unwrap makes errors.Is(err, ErrInvalidCustom) true.
func (e *CustomError) Unwrap() error { return ErrInvalidCustom }

// SafeFormatError marks the whole message as safe for redaction-aware
// reporting: it is built from constants, codes and positions only.
func (e *CustomError) SafeFormatError(p errors.Printer) (next error) {
	p.Printf("profiles: custom state %s at line %d, column %d: %s",
		errors.Safe(string(e.Code)), e.Line, e.Column, errors.Safe(e.Message))
	return nil
}

func newError(code ErrorCode, line, col int, msg string) *CustomError {
	return &CustomError{Code: code, Message: msg, Line: line, Column: col}
}
