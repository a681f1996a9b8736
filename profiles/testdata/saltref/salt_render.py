#!/usr/bin/env python3
"""Reference: what Salt 3006.0 renders from a custom source saved as
salt://oduflow/custom.sls (saltenv base), for comparison with CompileCustom.

The loader below is salt/utils/yamlloader.py of Salt 3006.0 (Apache-2.0,
SaltStack/VMware), trimmed to what the sls YAML renderer uses
(salt/renderers/yaml.py: SaltYamlSafeLoader with dictclass=OrderedDict, over
yaml.CSafeLoader). render_sls follows salt/state.py BaseHighState.render_state
for a single sls without include/extend/exclude: _handle_state_decls, then
_handle_iorder with iorder starting at 10000 (state_auto_order: True).

requisite_in_strings() performs, in source order, the conversion of plain
string targets that State.requisite_in applies first at call time (the
compiler does it at compile time so that JSON key order cannot change it).

normalize() applies the one deliberate difference of CompileCustom: the
function name first and the single-key argument mappings sorted by name
(Salt's verify_high, requisite_in and compile_high_data do not depend on the
position of list items; duplicate argument names are refused).

Usage: python3 salt_render.py FILE.yaml...   writes FILE.salt.json beside each
input (sorted keys); ints stay ints, floats keep a fraction or exponent.
"""
import json
import sys
from collections import OrderedDict

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, SequenceNode

BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SaltYamlSafeLoader(BaseLoader):
    def __init__(self, stream, dictclass=dict):
        super().__init__(stream)
        if dictclass is not dict:
            self.add_constructor("tag:yaml.org,2002:map", type(self).construct_yaml_map)
            self.add_constructor("tag:yaml.org,2002:omap", type(self).construct_yaml_map)
        self.add_constructor("tag:yaml.org,2002:str", type(self).construct_yaml_str)
        self.add_constructor("tag:yaml.org,2002:python/unicode", type(self).construct_unicode)
        self.add_constructor("tag:yaml.org,2002:timestamp", type(self).construct_scalar)
        self.dictclass = dictclass

    def construct_yaml_map(self, node):
        data = self.dictclass()
        yield data
        value = self.construct_mapping(node)
        data.update(value)

    def construct_unicode(self, node):
        return node.value

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, "expected a mapping node", node.start_mark)
        self.flatten_mapping(node)
        mapping = self.dictclass()
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            hash(key)
            value = self.construct_object(value_node, deep=deep)
            if key in mapping:
                raise ConstructorError(None, None, "found conflicting ID", key_node.start_mark)
            mapping[key] = value
        return mapping

    def construct_scalar(self, node):
        if node.tag == "tag:yaml.org,2002:int":
            if node.value == "0":
                pass
            elif node.value.startswith("0") and not node.value.startswith(("0b", "0x")):
                node.value = node.value.lstrip("0")
                if node.value == "":
                    node.value = "0"
        return super().construct_scalar(node)

    def construct_yaml_str(self, node):
        return self.construct_scalar(node)

    def flatten_mapping(self, node):
        # merge keys are refused by CompileCustom; Salt's flattening is not
        # needed for the accepted corpus.
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ConstructorError(None, None, "merge key", key_node.start_mark)


def load(text):
    return yaml.load(text, Loader=lambda s: SaltYamlSafeLoader(s, dictclass=OrderedDict))


def render_sls(text, sls="oduflow.custom", saltenv="base"):
    state = load(text) or {}
    # _handle_state_decls
    for name in state:
        if not isinstance(state[name], dict):
            if isinstance(state[name], str) and "." in state[name]:
                comps = state[name].split(".")
                state[name] = {"__sls__": sls, "__env__": saltenv, comps[0]: [comps[1]]}
                continue
            raise ValueError("ID %r is not a dictionary" % name)
        skeys = set()
        for key in list(state[name]):
            if key.startswith("_") or not isinstance(state[name][key], list):
                continue
            if "." in key:
                comps = key.split(".")
                if comps[0] in skeys:
                    raise ValueError("multiple state declarations of the same type")
                state[name][comps[0]] = state[name].pop(key)
                state[name][comps[0]].append(comps[1])
                skeys.add(comps[0])
                continue
            skeys.add(key)
        state[name].setdefault("__sls__", sls)
        state[name].setdefault("__env__", saltenv)
    # _handle_iorder
    iorder = 10000
    for name in state:
        for s_dec in state[name]:
            if not isinstance(s_dec, str) or not isinstance(state[name], dict):
                continue
            if not isinstance(state[name][s_dec], list) or s_dec.startswith("_"):
                continue
            found = any(isinstance(a, dict) and len(a) > 0 and next(iter(a)) == "order"
                        for a in state[name][s_dec])
            if not found:
                state[name][s_dec].append({"order": iorder})
                iorder += 1
    return state


REQ_IN = {"require_in", "watch_in", "onfail_in", "onchanges_in", "use", "use_in", "prereq", "prereq_in"}


def requisite_in_strings(high):
    """The first step of salt/state.py State.requisite_in (3006.0) for list
    items that are not dicts, applied in source (dictionary) order:
    an id becomes {first module of that id: id}; otherwise the first state
    whose name argument equals the string; otherwise the item is skipped
    (kept here: Salt ignores it either way)."""
    for id_, body in high.items():
        for state, run in body.items():
            if state.startswith("__"):
                continue
            for arg in run:
                if not isinstance(arg, dict) or len(arg) < 1:
                    continue
                key = next(iter(arg))
                if key not in REQ_IN or not isinstance(arg[key], list):
                    continue
                items = arg[key]
                for i, ind in enumerate(items):
                    if isinstance(ind, dict):
                        continue
                    if ind in high:
                        _ind_high = [x for x in high[ind] if not x.startswith("__")]
                        items[i] = {_ind_high[0]: ind}
                        continue
                    found = False
                    for _id in iter(high):
                        for st8 in [_st8 for _st8 in iter(high[_id]) if not _st8.startswith("__")]:
                            for j in iter(high[_id][st8]):
                                if isinstance(j, dict) and "name" in j:
                                    if j["name"] == ind:
                                        ind = {st8: _id}
                                        found = True
                    if found:
                        items[i] = ind
    return high


def _sort_args(lst):
    funs = [a for a in lst if isinstance(a, str)]
    args = sorted((a for a in lst if isinstance(a, dict)), key=lambda a: next(iter(a)))
    return funs + args


def normalize(high):
    for body in high.values():
        for key, lst in body.items():
            if key.startswith("__"):
                continue
            body[key] = _sort_args(lst)
            for a in body[key]:
                if isinstance(a, dict) and "names" in a:
                    a["names"] = [
                        {k: _sort_args(v) for k, v in e.items()} if isinstance(e, dict) else e
                        for e in a["names"]
                    ]
    return high


def main(paths):
    for p in paths:
        with open(p, "rb") as f:
            text = f.read().decode("utf-8-sig")
        high = normalize(requisite_in_strings(render_sls(text)))
        out = p[: -len(".yaml")] + ".salt.json"
        with open(out, "w", encoding="utf-8") as f:
            json.dump(high, f, sort_keys=True, ensure_ascii=False, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
