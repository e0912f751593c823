//! Reduction operators: the built-in ones (sum, product, min, max, bitwise and, or, xor)
//! work on whole slices so the compiler can vectorise them; a user closure
//! `Fn(&T, &T) -> T` is applied element by element with the operands in the order the
//! schedule says (`Action::CombineLeft`: received ⊕ held; `CombineRight`: held ⊕
//! received), so a non-commutative operator is honoured in rank order.

use bytemuck::Pod;

/// Element types with the arithmetic built-ins (integers wrap, as MPI's do in practice).
pub trait Arith: Pod {
    /// `a + b` (wrapping for integers).
    fn add(a: Self, b: Self) -> Self;
    /// `a · b` (wrapping for integers).
    fn mul(a: Self, b: Self) -> Self;
    /// The smaller of `a` and `b`.
    fn min(a: Self, b: Self) -> Self;
    /// The larger of `a` and `b`.
    fn max(a: Self, b: Self) -> Self;
}

/// Element types with the bitwise built-ins.
pub trait Bits: Pod {
    /// `a & b`.
    fn and(a: Self, b: Self) -> Self;
    /// `a | b`.
    fn or(a: Self, b: Self) -> Self;
    /// `a ^ b`.
    fn xor(a: Self, b: Self) -> Self;
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            fn min(a: Self, b: Self) -> Self { Ord::min(a, b) }
            fn max(a: Self, b: Self) -> Self { Ord::max(a, b) }
        }
        impl Bits for $t {
            fn and(a: Self, b: Self) -> Self { a & b }
            fn or(a: Self, b: Self) -> Self { a | b }
            fn xor(a: Self, b: Self) -> Self { a ^ b }
        }
    )*};
}
integers!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn add(a: Self, b: Self) -> Self { a + b }
            fn mul(a: Self, b: Self) -> Self { a * b }
            fn min(a: Self, b: Self) -> Self { a.min(b) }
            fn max(a: Self, b: Self) -> Self { a.max(b) }
        }
    )*};
}
floats!(f32, f64);

/// Combine `src` into `dst` (`dst ← dst ⊕ src`) with a commutative built-in.
type SliceFn<T> = fn(&mut [T], &[T]);
/// A user's operator on two elements, left operand first.
type ElementFn<'f, T> = Box<dyn Fn(&T, &T) -> T + Send + Sync + 'f>;

enum Combine<'f, T> {
    /// A built-in: its slice function and which built-in it is (for a backend's own
    /// reductions, found without comparing names on every call).
    Slices(SliceFn<T>, crate::transport::Builtin),
    Elements(ElementFn<'f, T>),
}

/// A reduction operator on elements of type `T`.
///
/// ```
/// use hypercomm_rt::Op;
/// assert!(Op::<u32>::sum().is_commutative());
/// let matmul = Op::associative(|a: &[u32; 2], b: &[u32; 2]| [a[0] * b[0], a[0] * b[1] + a[1]]);
/// assert!(!matmul.is_commutative());
/// assert_eq!(matmul.apply(&[2, 1], &[3, 5]), [6, 11]);
/// ```
pub struct Op<'f, T> {
    combine: Combine<'f, T>,
    commutative: bool,
    name: &'static str,
}

impl<T> std::fmt::Debug for Op<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Op({})", self.name)
    }
}

macro_rules! builtin {
    ($trait:ident, $($name:ident => $f:ident, $b:ident, $doc:literal);*) => {
        impl<T: $trait> Op<'static, T> {$(
            #[doc = $doc]
            pub fn $name() -> Self {
                fn slices<T: $trait>(dst: &mut [T], src: &[T]) {
                    for (d, s) in dst.iter_mut().zip(src) {
                        *d = T::$f(*d, *s);
                    }
                }
                Op {
                    combine: Combine::Slices(slices::<T>, crate::transport::Builtin::$b),
                    commutative: true,
                    name: stringify!($name),
                }
            }
        )*}
    };
}
builtin!(Arith,
    sum => add, Sum, "Sum (wrapping for integers).";
    product => mul, Product, "Product (wrapping for integers).";
    min => min, Min, "Minimum.";
    max => max, Max, "Maximum.");
builtin!(Bits,
    bit_and => and, BitAnd, "Bitwise and.";
    bit_or => or, BitOr, "Bitwise or.";
    bit_xor => xor, BitXor, "Bitwise exclusive or.");

impl<'f, T: Pod> Op<'f, T> {
    /// A user operator that is associative and commutative: algorithms may combine in
    /// any order.
    pub fn commutative(f: impl Fn(&T, &T) -> T + Send + Sync + 'f) -> Self {
        Op {
            combine: Combine::Elements(Box::new(f)),
            commutative: true,
            name: "user-commutative",
        }
    }

    /// A user operator that is associative but not commutative: the result is
    /// in_0 ⊕ in_1 ⊕ … in rank order, and only algorithms that keep that order run it.
    pub fn associative(f: impl Fn(&T, &T) -> T + Send + Sync + 'f) -> Self {
        Op {
            combine: Combine::Elements(Box::new(f)),
            commutative: false,
            name: "user-associative",
        }
    }

    /// The built-in this operator is, if it is one (for a backend's own reductions).
    pub(crate) fn builtin(&self) -> Option<crate::transport::Builtin> {
        match self.combine {
            Combine::Slices(_, b) => Some(b),
            Combine::Elements(_) => None,
        }
    }

    /// Whether a backend's own reduction may know this operator and `T` (a built-in
    /// operator on a primitive number, [`crate::transport::NativeCall`]'s `op` and
    /// `elem`). Where it cannot, `Algo::Auto` runs a schedule, and the tuning keeps
    /// its picks apart from the built-ins' (a user operator's cost is its own).
    pub(crate) fn backend_knows(&self) -> bool {
        self.builtin().is_some() && crate::transport::Elem::of::<T>().is_some()
    }

    /// Whether operands may be swapped.
    pub fn is_commutative(&self) -> bool {
        self.commutative
    }

    /// `a ⊕ b`.
    pub fn apply(&self, a: &T, b: &T) -> T {
        match &self.combine {
            Combine::Slices(f, _) => {
                let mut d = [*a];
                f(&mut d, std::slice::from_ref(b));
                d[0]
            }
            Combine::Elements(f) => f(a, b),
        }
    }

    /// `dst ← other ⊕ dst` when `other_left`, else `dst ← dst ⊕ other`, element-wise.
    pub(crate) fn combine(&self, dst: &mut [T], other: &[T], other_left: bool) {
        debug_assert_eq!(dst.len(), other.len());
        match &self.combine {
            Combine::Slices(f, _) => f(dst, other),
            Combine::Elements(f) if other_left => {
                for (d, o) in dst.iter_mut().zip(other) {
                    *d = f(o, d);
                }
            }
            Combine::Elements(f) => {
                for (d, o) in dst.iter_mut().zip(other) {
                    *d = f(d, o);
                }
            }
        }
    }

    /// One element of [`Op::combine`].
    pub(crate) fn combine_one(&self, dst: &mut T, other: &T, other_left: bool) {
        *dst = if other_left {
            self.apply(other, dst)
        } else {
            self.apply(dst, other)
        };
    }
}
