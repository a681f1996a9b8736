# Harness role roles.client_credentials (profile credentials): every result is true, retcode 0.
# A real role rotates credentials from pillar; this one writes a 0600 file without any secret in it,
# so nothing secret can reach a return, a receipt or a log.
credentials_check:
  test.succeed_without_changes:
    - name: credentials source present

/var/tmp/oduflow-harness/client_credentials.txt:
  file.managed:
    - makedirs: True
    - mode: '0600'
    - contents: |
        managed by the oduflow-go harness, roles.client_credentials (no secret here)
    - require:
      - test: credentials_check
