package profiles

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// ErrInvalidCustom matches (errors.Is) every *CustomError: a custom state
// source that ValidateCustom or CompileCustom refused.
var ErrInvalidCustom = errors.New("profiles: invalid custom state source")

// errorCode is the stable, machine-readable reason a custom source was refused
// (CustomError.Code). Codes never change meaning; new ones may be added. The
// package documentation lists them; keep that table in step with this list.
type errorCode = string

// The error codes of *CustomError. The corpus under testdata/custom/reject
// has at least one source for each.
const (
	// Limits and raw text (checked before any YAML parsing).
	codeTooLarge          errorCode = "too_large"          // more than MaxSourceBytes
	codeInvalidUTF8       errorCode = "invalid_utf8"       // not valid UTF-8
	codeInvalidCharacter  errorCode = "invalid_character"  // NUL, control, NEL, U+2028/9, non-leading BOM, ...
	codeTemplateSyntax    errorCode = "template_syntax"    // "{{", "{%" or "{#" anywhere, comments included
	codeRendererDirective errorCode = "renderer_directive" // a line starting with "#!"
	codeYAMLDirective     errorCode = "yaml_directive"     // a %YAML or %TAG directive line
	// YAML structure.
	codeSyntax            errorCode = "yaml_syntax"        // the YAML parser refused the source
	codeMultipleDocuments errorCode = "multiple_documents" // more than one YAML document
	codeEmptyDocument     errorCode = "empty_document"     // nothing, null, or an empty mapping
	codeNotMapping        errorCode = "not_mapping"        // the top level is not a mapping
	codeAnchor            errorCode = "anchor"             // &anchor
	codeAlias             errorCode = "alias"              // *alias
	codeExplicitTag       errorCode = "explicit_tag"       // !tag, !!type, or the non-specific "!"
	codeMergeKey          errorCode = "merge_key"          // a plain "<<"
	codeDuplicateKey      errorCode = "duplicate_key"      // the same key twice in one mapping, any depth
	codeTooDeep           errorCode = "too_deep"           // more than maxDepth nested collections
	codeTooManyIDs        errorCode = "too_many_ids"       // more than maxStateIDs state ids
	codeTooManyItems      errorCode = "too_many_items"     // a list or mapping longer than maxItems
	codeScalarTooLong     errorCode = "scalar_too_long"    // a scalar longer than maxScalarBytes
	codeNonStringKey      errorCode = "non_string_key"     // a key (id, argument, nested) that is not a string
	codeAmbiguousScalar   errorCode = "ambiguous_scalar"   // a plain scalar YAML 1.1 and 1.2 read differently: quote it
	codeNumberOutOfRange  errorCode = "number_out_of_range"
	// Salt state semantics.
	codeForbiddenDeclaration errorCode = "forbidden_declaration" // include, extend or exclude
	codeInvalidID            errorCode = "invalid_id"            // empty, "__"-reserved, control characters, "_|-"
	codeInvalidState         errorCode = "invalid_state"         // an id whose value is not a declaration mapping
	codeInvalidFunction      errorCode = "invalid_function"      // not a full module.function
	codeDuplicateModule      errorCode = "duplicate_module"      // two functions of one module under one id
	codeArgumentsNotList     errorCode = "arguments_not_list"    // a function whose value is not a list
	codeInvalidArgument      errorCode = "invalid_argument"      // a list item that is not a single-key mapping
	codeDuplicateArgument    errorCode = "duplicate_argument"    // the same argument twice for one function
	codeReservedArgument     errorCode = "reserved_argument"     // fun, state, prerequired, __*
	codeParallel             errorCode = "parallel_forbidden"    // an explicit parallel argument
	codeInvalidRequisite     errorCode = "invalid_requisite"     // a requisite that is not a list of ids or {module: id}
	codeRequisiteCycle       errorCode = "requisite_cycle"       // two ids that require/watch/prereq/onchange each other
	codeInvalidName          errorCode = "invalid_name"          // name that is not a string
	codeInvalidNames         errorCode = "invalid_names"         // names that is not a list of strings or {name: [args]}
	codeInvalidOrder         errorCode = "invalid_order"         // order that is not an integer within ±100000, "first" or "last"
	codeAmbiguousOrder       errorCode = "ambiguous_order"       // explicit orders Salt would break by id order
	codeNotCanonical         errorCode = "not_canonical"         // canonical JSON refused the compiled data (not expected)
)

// CustomError is the error of ValidateCustom and CompileCustom. Line and
// Column are 1-based (Column counts characters); 0 means the whole source or an
// unknown position. Message is fixed text chosen by this package: it never
// contains any part of the source, which may hold secrets.
type CustomError struct {
	Code    string // one of the codes listed in the package documentation
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

// SafeMessage marks the whole message as safe for redaction-aware reporting
// (cockroachdb's errors.Redact): it is built from constants, codes and
// positions only.
func (e *CustomError) SafeMessage() string { return e.Error() }

func newError(code errorCode, line, col int, msg string) *CustomError {
	return &CustomError{Code: code, Message: msg, Line: line, Column: col}
}
