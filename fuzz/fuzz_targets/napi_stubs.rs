//! Stand-ins for the N-API functions (napi_*) that only Node.js provides.
//! The h3core rlib carries napi-rs glue that references them; the fuzz
//! targets never run it, but sanitizer coverage keeps its code alive, so
//! the binary needs the symbols to link and to load. Each one aborts if it
//! were ever called. A napi-rs update that references a new function makes
//! the link fail with its name: add it to the list.

macro_rules! stubs {
    ($($name:ident)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name() -> i32 {
            eprintln!(concat!("N-API function called in a fuzz target: ", stringify!($name)));
            std::process::abort()
        }
    )*};
}

stubs! {
    napi_call_function
    napi_call_threadsafe_function
    napi_coerce_to_string
    napi_create_buffer
    napi_create_buffer_copy
    napi_create_double
    napi_create_error
    napi_create_external_buffer
    napi_create_function
    napi_create_object
    napi_create_reference
    napi_create_string_utf8
    napi_create_threadsafe_function
    napi_create_uint32
    napi_define_properties
    napi_delete_reference
    napi_fatal_exception
    napi_get_and_clear_last_exception
    napi_get_cb_info
    napi_get_global
    napi_get_named_property
    napi_get_null
    napi_get_prototype
    napi_get_reference_value
    napi_get_typedarray_info
    napi_get_undefined
    napi_get_value_bool
    napi_get_value_double
    napi_get_value_string_utf8
    napi_get_value_uint32
    napi_has_own_property
    napi_is_error
    napi_is_exception_pending
    napi_new_instance
    napi_reference_unref
    napi_release_threadsafe_function
    napi_set_named_property
    napi_throw
    napi_typeof
    napi_unref_threadsafe_function
    napi_unwrap
    napi_wrap
}
