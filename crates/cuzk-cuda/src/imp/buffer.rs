//! Device memory owned from Rust: allocated on one device, freed on drop. Used for the
//! witness, a/b/c and index lists of the GPU-resident path, and the quotient's output.

use std::ffi::c_void;
use std::marker::PhantomData;

use super::error::{check, CudaError};
use super::ffi;

pub struct DeviceBuffer<T> {
    index: usize,
    ptr: *mut T,
    len: usize,
    _t: PhantomData<T>,
}

// SAFETY: the buffer is device memory; the pointer is never dereferenced on the host, and
// every use goes through the glue, which the prover serialises per device.
unsafe impl<T: Send> Send for DeviceBuffer<T> {}
unsafe impl<T: Sync> Sync for DeviceBuffer<T> {}

impl<T: Copy> DeviceBuffer<T> {
    /// Uninitialised device memory for `len` elements.
    pub fn alloc(index: usize, len: usize) -> Result<Self, CudaError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        check(unsafe { ffi::cuzk_device_alloc(index, len * std::mem::size_of::<T>(), &mut p) })?;
        Ok(DeviceBuffer { index, ptr: p.cast(), len, _t: PhantomData })
    }

    /// A copy of `data` on the device; also returns the copy's wall time in ms.
    pub fn upload(index: usize, data: &[T]) -> Result<(Self, f32), CudaError> {
        let b = Self::alloc(index, data.len())?;
        let ms = b.write(0, data)?;
        Ok((b, ms))
    }

    /// Copy `data` into elements `offset..offset + data.len()`; returns the copy's wall ms.
    /// Large copies go through page-locked staging on several threads (`cuda/transfer.cu`).
    pub fn write(&self, offset: usize, data: &[T]) -> Result<f32, CudaError> {
        assert!(offset + data.len() <= self.len, "device buffer write out of bounds");
        let mut ms = 0f32;
        let bytes = std::mem::size_of_val(data);
        check(unsafe {
            ffi::cuzk_copy_to_device(self.index, self.ptr.add(offset).cast(), data.as_ptr().cast(), bytes, &mut ms)
        })?;
        Ok(ms)
    }

    /// Copy elements `offset..offset + out.len()` to the host.
    pub fn read(&self, offset: usize, out: &mut [T]) -> Result<(), CudaError> {
        assert!(offset + out.len() <= self.len, "device buffer read out of bounds");
        let bytes = std::mem::size_of_val(out);
        check(unsafe {
            ffi::cuzk_copy_to_host(self.index, out.as_mut_ptr().cast(), self.ptr.add(offset).cast(), bytes)
        })
    }

    pub fn to_vec(&self) -> Result<Vec<T>, CudaError> {
        let mut v: Vec<T> = Vec::with_capacity(self.len);
        let bytes = self.len * std::mem::size_of::<T>();
        check(unsafe { ffi::cuzk_copy_to_host(self.index, v.as_mut_ptr().cast(), self.ptr.cast(), bytes) })?;
        // SAFETY: the copy above initialised all `len` elements (T is plain data).
        unsafe { v.set_len(self.len) };
        Ok(v)
    }

    /// Take ownership of a device pointer the glue allocated on `index` as `cuzk_device_alloc`
    /// does (from the device's stream-ordered pool; `cuzk_device_free` gives it back).
    pub(crate) unsafe fn from_raw(index: usize, ptr: *mut T, len: usize) -> Self {
        DeviceBuffer { index, ptr, len, _t: PhantomData }
    }

    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }

    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn device_index(&self) -> usize {
        self.index
    }

    pub fn bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        unsafe { ffi::cuzk_device_free(self.index, self.ptr.cast()) };
    }
}
