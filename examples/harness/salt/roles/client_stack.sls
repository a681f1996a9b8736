# Harness role roles.client_stack (profile configure): every result is true, retcode 0.
stack_step_one:
  test.succeed_without_changes:
    - name: stack step one

stack_step_two:
  test.succeed_without_changes:
    - name: stack step two

/var/tmp/oduflow-harness/client_stack.txt:
  file.managed:
    - makedirs: True
    - contents: |
        managed by the oduflow-go harness, roles.client_stack
    - require:
      - test: stack_step_one
