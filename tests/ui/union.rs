#[derive(faultline::Fault)]
union Bits {
    a: u32,
    b: f32,
}

fn main() {}
