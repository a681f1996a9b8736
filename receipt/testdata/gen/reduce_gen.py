import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
# The captured Salt 3006.0 returns live outside the repository (../shared/vectors).
V = (sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, '../../../../shared/vectors/salt-3006.0/eventbus')) + '/'
def ret(f): return json.load(open(V+f))['data']['return']
cases=[]
def add(name, r, status, passed=0, total=0):
    cases.append({"name":name,"return":r,"expect":{"status":status,"passed":passed,"total":total}})
def entry(result, **kw):
    e={"name":"x","changes":{},"comment":"c","__run_num__":0}
    e.update(kw)
    e["result"]=result
    return e
# real returns captured from Salt 3006.0
add("real_state_apply_client_stack_success", ret('event_ret_state_apply_client_stack.json'), "succeeded", 3, 3)
add("real_state_apply_client_production_one_false", ret('event_ret_state_apply_client_production.json'), "failed", 2, 3)
add("real_state_apply_render_error_list", ret('event_ret_state_apply_render_error.json'), "unknown")
add("real_state_apply_compile_error_list", ret('event_ret_state_apply_compile_error.json'), "unknown")
add("real_state_apply_missing_requisite", ret('event_ret_state_apply_missing_requisite.json'), "failed", 1, 2)
add("real_state_apply_test_mode_null_result", ret('event_ret_state_apply_client_stack_test_mode.json'), "failed", 2, 3)
add("real_state_high_success", ret('event_ret_state_high.json'), "succeeded", 1, 1)
# not a mapping, or empty
add("empty_mapping", {}, "unknown")
add("null_return", None, "unknown")
add("string_return", "ok", "unknown")
add("string_true_return", "True", "unknown")
add("integer_return", 0, "unknown")
add("float_return", 1.5, "unknown")
add("bool_true_return", True, "unknown")
add("empty_list_return", [], "unknown")
add("list_of_entries_return", [entry(True)], "unknown")
# results
add("single_true", {"test_|-a_|-a_|-succeed_without_changes": entry(True)}, "succeeded", 1, 1)
add("single_false", {"test_|-a_|-a_|-fail_without_changes": entry(False)}, "failed", 0, 1)
add("result_string_False", {"s1": entry("False")}, "failed", 0, 1)
add("result_string_True_is_not_true", {"s1": entry("True")}, "failed", 0, 1)
add("result_integer_1_is_not_true", {"s1": entry(1), "s2": entry(True)}, "failed", 1, 2)
add("result_integer_0", {"s1": entry(0)}, "failed", 0, 1)
add("result_null", {"s1": entry(None), "s2": entry(True)}, "failed", 1, 2)
add("result_empty_map", {"s1": entry({})}, "failed", 0, 1)
add("result_list_true", {"s1": entry([True])}, "failed", 0, 1)
add("two_true_one_false", {"a": entry(True), "b": entry(False), "c": entry(True)}, "failed", 2, 3)
add("all_false", {"a": entry(False), "b": entry(False)}, "failed", 0, 2)
add("sixty_true", {"state_%02d" % i: entry(True, __run_num__=i) for i in range(60)}, "succeeded", 60, 60)
add("minimal_entries_only_result", {"a": {"result": True}, "b": {"result": True}}, "succeeded", 2, 2)
add("non_ascii_state_ids", {"файл_|-конфиг_|-/etc/ü_|-managed": entry(True), "😀": entry(True)}, "succeeded", 2, 2)
# malformed entries -> unknown, even beside false results
add("entry_without_result", {"a": entry(True), "b": {"name": "b", "changes": {}, "comment": "no result"}}, "unknown")
add("entry_without_result_beside_false", {"a": entry(False), "b": {"comment": "no result"}}, "unknown")
add("entry_empty_map", {"a": {}}, "unknown")
add("entry_is_string", {"a": entry(True), "b": "Rendering SLS failed"}, "unknown")
add("entry_is_list", {"a": ["error one", "error two"]}, "unknown")
add("entry_is_null", {"a": None}, "unknown")
add("entry_is_true", {"a": True}, "unknown")
add("entry_is_number", {"a": entry(True), "b": 3}, "unknown")
add("result_only_nested_deeper", {"a": {"changes": {"result": True}, "comment": "x"}}, "unknown")
add("result_key_capitalized", {"a": {"Result": True}}, "unknown")
# trimmed by Salt
add("trimmed_whole_return", "VALUE_TRIMMED", "unknown")
add("trimmed_entry", {"a": entry(True), "b": "VALUE_TRIMMED"}, "unknown")
add("trimmed_result", {"a": entry(True), "b": entry("VALUE_TRIMMED")}, "unknown")
add("trimmed_changes_field", {"a": entry(True, changes="VALUE_TRIMMED")}, "unknown")
add("trimmed_nested_diff", {"a": entry(True, changes={"diff": "VALUE_TRIMMED"})}, "unknown")
add("trimmed_in_nested_list", {"a": entry(False, comment=["ok", "VALUE_TRIMMED"])}, "unknown")
add("trimmed_as_key_is_not_trimming", {"VALUE_TRIMMED": entry(True)}, "succeeded", 1, 1)
add("trimmed_lowercase_is_just_text", {"a": entry(True, comment="value_trimmed")}, "succeeded", 1, 1)

# independent reference reduction (written from the reduction table of receipt.Reduce's doc comment, not from the Go code)
def trimmed(v):
    if v == "VALUE_TRIMMED" and isinstance(v, str): return True
    if isinstance(v, dict): return any(trimmed(x) for x in v.values())
    if isinstance(v, list): return any(trimmed(x) for x in v)
    return False
def ref(r):
    if not isinstance(r, dict) or not r or trimmed(r): return ("unknown",0,0)
    p=0
    for k,e in r.items():
        if not isinstance(e, dict) or "result" not in e: return ("unknown",0,0)
        if e["result"] is True: p+=1
    return ("succeeded" if p==len(r) else "failed", p, len(r))
for c in cases:
    e=c["expect"]; got=ref(c["return"])
    assert got==(e["status"],e["passed"],e["total"]), (c["name"], got, e)
names=[c["name"] for c in cases]; assert len(names)==len(set(names))
out = os.path.join(HERE, '..', 'reduce-cases.json')
with open(out, 'w') as f:
    json.dump(cases, f, indent=1, ensure_ascii=False)
    f.write('\n')
print(len(cases))
