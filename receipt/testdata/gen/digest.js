const {canon}=require("./jcs.js");
const crypto=require("crypto");
const R=String.raw;
const cases=[
 ["empty_object", `{}`],
 ["empty_array", `[]`],
 ["literals", `[null,true,false]`],
 ["top_level_string", `"plain"`],
 ["top_level_number", `1.5`],
 ["rfc8785_3_2_2_example", R`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`],
 ["rfc8785_3_2_3_sorting", R`{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`],
 ["utf16_order_emoji_before_private_use_and_uffff", R`{"\uffff":1,"\ue000":2,"\ud83d\ude00":3,"\ufb33":4,"\u00ff":5,"z":6}`],
 ["utf16_order_supplementary_vs_bmp_high", R`{"\ud800\udc00":"U+10000","\ud7ff":"U+D7FF","\uff01":"U+FF01","\udbff\udfff":"U+10FFFF"}`],
 ["key_order_ascii", `{"b":1,"a":2,"B":3,"_":4,"1":5,"":6,"aa":7,"a b":8}`],
 ["integers", `[0,1,-1,100,123456789,-987654321,4294967296,9007199254740991,9007199254740992,-9007199254740992]`],
 ["negative_zero", `[-0,-0.0,0.0,-0e0,0e5]`],
 ["floats_basic", `[0.1,1.5,100.0,1e2,2.50,0.30000000000000004,-1.25,3.141592653589793]`],
 ["floats_exponent_boundaries", `[1e21,1e20,123e18,1e-7,1e-6,0.000001,1.5e-7,12e-8,1E+2,1e-0]`],
 ["floats_extremes", `[5e-324,-5e-324,1.7976931348623157e308,-1.7976931348623157e308,2.2250738585072014e-308]`],
 ["rfc8785_appendix_b_1", `[9.999999999999997e22,1e23,1.0000000000000001e23,9.999999999999997e20,9.999999999999999e20,2.9514790517935283e20]`],
 ["rfc8785_appendix_b_2", `[9.999999999999997e-7,0.000001,333333333.3333332,333333333.33333325,333333333.3333333,333333333.3333334,333333333.33333343]`],
 ["rfc8785_appendix_b_3", `[-0.0000033333333333333333,1424953923781206.2,9007199254740992.0,-9007199254740992.0]`],
 ["non_ascii_strings", R`{"fr":"héllo wörld","ja":"日本語のテキスト","emoji":"😀🎉","escaped":"\u00e9\u65e5\ud83d\ude00","greek":"Ωμέγα"}`],
 ["escapes", R`["\"","\\","\/","\b","\f","\n","\r","\t","a\"b\\c/d"]`],
 ["control_chars", R`["\u0000","\u0001","\u0007","\u000b","\u000e","\u001f","\u007f","\u0080","\u009f"]`],
 ["line_separators_literal", R`["\u2028","\u2029","\ufeff","\ufffd"]`],
 ["nested_maps_and_arrays", `{"b":[1,{"d":true,"c":null,"a":[[],{}]}],"a":{"z":{"y":[[[]]]},"x":"deep"}}`],
 ["deep_nesting", `[[[[[[[[[[[[[[[[[[[[{"k":[[[[[[[[[[1]]]]]]]]]]}]]]]]]]]]]]]]]]]]]]]`],
 ["whitespace_in_input", " \n\t{ \"a\" : 1 ,\r\n \"b\" : [ 1 , 2 , { } ] , \"c\" : \"x y\" } \n"],
 ["salt_high_data_custom_payload", `{"lab_high_ok":{"test":["succeed_without_changes",{"name":"high data ok"}],"__sls__":"saltlab.high","__env__":"base"}}`],
 ["custom_payload_multi_state", R`{"install_nginx":{"pkg":["installed",{"name":"nginx"},{"version":"1.24.0-1"}]},"nginx_conf":{"file":["managed",{"name":"/etc/nginx/nginx.conf"},{"mode":"0644"},{"contents":"worker_processes 4;\nevents { worker_connections 1024; }\n"},{"require":[{"pkg":"install_nginx"}]}]},"__env__":"base"}`],
 ["receipt_shape", `{"protocol":1,"minion_id":"client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b","request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","jid":"20261129154606051411","profile":"configure","state_digest":"","status":"succeeded","passed":60,"total":60}`],
 ["mixed_numbers_in_objects", `{"int":42,"neg":-7,"float":0.5,"big_float":1.0e300,"tiny":1e-300,"exp_int":5e3,"frac_int":7.0}`],
 ["same_prefix_keys", R`{"abc":1,"ab":2,"abcd":3,"a":4,"ab\u0000":5}`],
 ["strings_with_quotes_in_keys", R`{"a\"b":1,"a\\b":2,"a\nb":3,"a/b":4}`],
];
const out=cases.map(([name,input])=>{const c=canon(JSON.parse(input));return {name,input,canonical:c,sha256:crypto.createHash("sha256").update(Buffer.from(c,"utf8")).digest("hex")};});
process.stdout.write(JSON.stringify(out,null,1)+"\n");
