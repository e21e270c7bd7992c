// napi-rs needs link arguments that let the cdylib resolve N-API symbols from
// the Node.js process that loads it.
fn main() {
    napi_build::setup();
}
