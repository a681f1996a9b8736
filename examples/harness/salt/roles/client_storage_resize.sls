# Harness role roles.client_storage_resize (profile volume_resize): every result is true, retcode 0.
# A real role grows a volume and its file system; this one records that it ran.
resize_check_volume:
  test.succeed_without_changes:
    - name: volume present

/var/tmp/oduflow-harness/client_storage_resize.txt:
  file.managed:
    - makedirs: True
    - contents: |
        managed by the oduflow-go harness, roles.client_storage_resize
    - require:
      - test: resize_check_volume
