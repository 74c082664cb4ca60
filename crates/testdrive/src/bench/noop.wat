;; The no-op guest of `testdrive bench-server` (bench/noop.rs): a waPC policy that receives
;; each call's operation and payload into its memory, reads neither, and answers: `validate`
;; accepts, `validate_settings` finds the settings valid, `protocol_version` is v1. What
;; policy-server spends on it is what it spends on a request with these settings apart from
;; the policy's work.
(module
  (import "wapc" "__guest_request" (func $guest_request (param i32 i32)))
  (import "wapc" "__guest_response" (func $guest_response (param i32 i32)))
  (import "wapc" "__guest_error" (func $guest_error (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"accepted\":true}")
  (data (i32.const 32) "{\"valid\":true}")
  (data (i32.const 64) "\"v1\"")
  (data (i32.const 96) "unknown operation")
  ;; the operation and the payload are received from this offset on
  (global $inbox i32 (i32.const 1024))

  (func (export "__guest_call") (param $op_len i32) (param $payload_len i32) (result i32)
    (local $end i64)
    (local $pages i64)
    ;; grow the memory to hold both (in 64-bit: a length near 4 GiB must not wrap)
    (local.set $end (i64.add (i64.extend_i32_u (global.get $inbox))
      (i64.add (i64.extend_i32_u (local.get $op_len)) (i64.extend_i32_u (local.get $payload_len)))))
    (local.set $pages (i64.div_u (i64.add (local.get $end) (i64.const 65535)) (i64.const 65536)))
    (if (i64.gt_u (local.get $pages) (i64.extend_i32_u (memory.size)))
      (then
        (if (i32.eq
              (memory.grow (i32.wrap_i64 (i64.sub (local.get $pages) (i64.extend_i32_u (memory.size)))))
              (i32.const -1))
          (then (return (i32.const 0))))))
    (call $guest_request (global.get $inbox) (i32.add (global.get $inbox) (local.get $op_len)))
    ;; the operation by its length: validate (8), validate_settings (17), protocol_version (16)
    (if (i32.eq (local.get $op_len) (i32.const 8))
      (then (call $guest_response (i32.const 0) (i32.const 17)) (return (i32.const 1))))
    (if (i32.eq (local.get $op_len) (i32.const 17))
      (then (call $guest_response (i32.const 32) (i32.const 14)) (return (i32.const 1))))
    (if (i32.eq (local.get $op_len) (i32.const 16))
      (then (call $guest_response (i32.const 64) (i32.const 4)) (return (i32.const 1))))
    (call $guest_error (i32.const 96) (i32.const 17))
    (i32.const 0)))
