# Harness role roles.client_production (profile production): one state fails on purpose,
# retcode 2, so the request ends failed with passed 2 of total 3.
production_ok:
  test.succeed_without_changes:
    - name: production ok

production_fails:
  test.fail_without_changes:
    - name: production deliberately fails

/var/tmp/oduflow-harness/client_production.txt:
  file.managed:
    - makedirs: True
    - contents: |
        managed by the oduflow-go harness, roles.client_production
