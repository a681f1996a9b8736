# The one test command is scripts/test.sh (scripts/test.sh -h lists its steps and flags); these are
# shorthands for it.
.PHONY: test quick
test:
	scripts/test.sh
quick:
	scripts/test.sh -quick
