pub fn available() -> bool {
    false
}
