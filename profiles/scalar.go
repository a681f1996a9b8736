package profiles

import (
	"math"
	"regexp"
	"strconv"
)

// Scalar policy (see doc.go): a plain (unquoted) scalar is accepted only when
// Salt's reading (PyYAML's YAML 1.1 implicit resolvers plus Salt's
// SaltYamlSafeLoader, salt/utils/yamlloader.py in 3006) and a YAML 1.2 reading
// give the same value. Accepted typed forms:
//
//	null:   "" (empty), ~, null, Null, NULL          -> nil
//	bool:   true, True, TRUE, false, False, FALSE    -> bool
//	int:    -?(0|[1-9][0-9]*), |n| <= 2^53           -> int64
//	float:  -?(0|[1-9][0-9]*)\.[0-9]+, not integral  -> float64
//
// Every other plain scalar that PyYAML 1.1, the YAML 1.2 core schema or
// yaml.v3 would read as a bool, int, float, null, merge key or value key is
// refused with codeAmbiguousScalar (yes/no/on/off, y/n, 0644, 0o644, 0x1F,
// 0b101, 1_000, 1:30, 1e3, 1.5e+3, .5, 1., +1, .inf, .nan, =, ...). All
// remaining plain scalars are strings, including timestamps such as
// 2001-12-14: SaltYamlSafeLoader constructs tag:yaml.org,2002:timestamp with
// construct_scalar, so Salt reads them as the literal string.

// The PyYAML 6 implicit resolvers (yaml/resolver.py), re.X whitespace removed;
// the bool resolver, ^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE
// |on|On|ON|off|Off|OFF)$, and null, merge and value are exact words handled in
// resolvePlain.
var (
	py11Float = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	py11Int   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	// YAML 1.2 core schema int and float (bool and null are literal lists).
	core12Int   = regexp.MustCompile(`^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$`)
	core12Float = regexp.MustCompile(`^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	// The forms accepted as numbers.
	plainInt   = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)$`)
	plainFloat = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)\.[0-9]+$`)
)

// maxSafeInteger is 2^53: beyond it, canonical JSON (IEEE doubles) cannot
// carry every integer exactly.
const maxSafeInteger = 1 << 53

const (
	msgAmbiguousBool = "yes/no/on/off and y/n are booleans in YAML 1.1 (Salt) but strings in YAML 1.2: " +
		"write true or false, or quote the value"
	msgAmbiguousNumber = "this number is read differently by YAML 1.1 (Salt: octal, hexadecimal, binary, " +
		"underscores, sexagesimal, exponent) and YAML 1.2: write a plain decimal, or quote the value"
	msgIntegralFloat = "a decimal with an integral value (like 2.0) would reach Salt as an integer: " +
		"write an integer, or quote the value"
	msgSpecialFloat = "infinity and NaN are not allowed: quote the value if a string is meant"
	msgValueKey     = "a plain '=' is the YAML 1.1 value key, which Salt cannot construct: quote it"
	msgTypedByV3    = "this plain scalar is not a string in every YAML version: quote it"
)

// isCandidate reports whether a plain scalar could resolve to anything but a
// string under any of the resolvers: PyYAML dispatches on the first
// character, and so do the YAML 1.2 schemas.
func isCandidate(v string) bool {
	if v == "" {
		return true
	}
	switch v[0] {
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~', '<', '=', '-', '+', '.',
		'0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// resolvePlain returns the value of a plain scalar. v3Tag is the tag yaml.v3
// resolved for it (a third opinion: anything it does not read as a string or
// a timestamp is refused unless accepted above). A non-nil *CustomError comes
// without a position; the caller adds it.
func resolvePlain(v, v3Tag string) (any, *CustomError) {
	if !isCandidate(v) {
		return plainString(v, v3Tag)
	}
	switch v {
	case "", "~", "null", "Null", "NULL":
		return nil, nil
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	case "y", "Y", "n", "N", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
		return nil, &CustomError{Code: codeAmbiguousScalar, Message: msgAmbiguousBool}
	case "=":
		return nil, &CustomError{Code: codeAmbiguousScalar, Message: msgValueKey}
	case "<<":
		return nil, &CustomError{Code: codeMergeKey, Message: msgMergeKey}
	}
	if c := v[0]; c != '-' && c != '+' && c != '.' && (c < '0' || c > '9') {
		// Starting with a letter, '~', '<' or '=': only the words above
		// resolve to anything but a string (py11Bool is that list).
		return plainString(v, v3Tag)
	}
	if plainInt.MatchString(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
			return nil, &CustomError{Code: codeNumberOutOfRange,
				Message: "integers must lie within ±2^53 (9007199254740992) to travel exactly as JSON: quote it"}
		}
		return n, nil
	}
	if plainFloat.MatchString(v) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, &CustomError{Code: codeNumberOutOfRange, Message: "number out of range: quote it"}
		}
		if f == math.Trunc(f) {
			return nil, &CustomError{Code: codeAmbiguousScalar, Message: msgIntegralFloat}
		}
		return f, nil
	}
	if py11Float.MatchString(v) || core12Float.MatchString(v) {
		switch v {
		case ".inf", ".Inf", ".INF", "-.inf", "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF", ".nan", ".NaN", ".NAN":
			return nil, &CustomError{Code: codeAmbiguousScalar, Message: msgSpecialFloat}
		}
		return nil, &CustomError{Code: codeAmbiguousScalar, Message: msgAmbiguousNumber}
	}
	if py11Int.MatchString(v) || core12Int.MatchString(v) {
		return nil, &CustomError{Code: codeAmbiguousScalar, Message: msgAmbiguousNumber}
	}
	return plainString(v, v3Tag)
}

// plainString returns v as a string unless yaml.v3 read it as something
// else (a third opinion; timestamps stay strings as in Salt).
func plainString(v, v3Tag string) (any, *CustomError) {
	if v3Tag != "" && v3Tag != "!!str" && v3Tag != "!!timestamp" {
		return nil, &CustomError{Code: codeAmbiguousScalar, Message: msgTypedByV3}
	}
	return v, nil
}
