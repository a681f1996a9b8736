// Package saltwire is Salt's wire, written once: ZMTP 3.1 framing over the NULL mechanism (the
// request port), and msgpack in the two dialects salt.payload packs (Request: use_bin_type=False,
// the old str family; Event: the current spec with str8 and bin), with a budget that bounds what
// decoding an untrusted document may allocate.
//
// Both ends of the module's conversation with a master use it: package salt (the client) and
// package salt/salttest (the master simulator). What each end decides is not here: the client's
// one-request connection, its reply cap, its error mapping; the simulator's ROUTER, its
// heartbeats, its faults and its answers. Because the two share these bytes, neither can check
// the other's codec: the captured vectors of real Salt 3006 traffic (salt/testdata,
// salt/salttest/testdata) are the independent check, and this package's tests also hold it
// against github.com/vmihailenco/msgpack/v5, a decoder written by others.
//
// Decoding has two shapes. Decode is what Salt's receivers do (raw=False,
// strict_map_key=False): maps become map[string]any, str and bin become string, ext 78/79/-1
// become time.Time, Constant, time.Time. DecodeOrdered loses nothing (wire order, key types,
// bin, ext), for a peer that must reproduce a document byte for byte. The event reader's fast
// path (SplitEventFrame, DecodeEventData) decodes an event frame over one string, every decoded
// string a substring of it; it must succeed exactly when Decode does, with equal values.
package saltwire
