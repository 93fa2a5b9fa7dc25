pub mod compress;
pub mod cbload;
pub mod systolic;
