pub mod compress;
pub mod cbload;
