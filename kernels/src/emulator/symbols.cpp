// The module data of an emulated kernel's library (cuda_emulator.hpp): its __constant__ and
// __device__ variables found in the library's ELF symbol table, at the address it was loaded.
#include "../cuda_emulator.hpp"

#include <elf.h>
#include <link.h>

#include <cstring>
#include <map>
#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/files.hpp>

#include "../cuda_source.hpp"
#include "library.hpp"

namespace cunumpy::detail {

// The data objects of an ELF64 shared library's symbol table (.symtab, which keeps the hidden
// and local symbols; .dynsym when stripped): name -> (value, size).
namespace {
using ElfObjects = std::map<std::string, std::pair<std::uint64_t, std::uint64_t>>;

ElfObjects elf_objects(const std::filesystem::path& file) {
  const std::string image = read_file(file);
  const auto fail = [&](const char* why) {
    return Error("the kernel emulator: cannot read the symbols of " + file.string() + " (" + why +
                 "); module data needs a 64-bit ELF library");
  };
  if (image.size() < sizeof(Elf64_Ehdr) || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0 ||
      static_cast<unsigned char>(image[EI_CLASS]) != ELFCLASS64)
    throw fail("not a 64-bit ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof(eh));
  const auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    const std::size_t at = eh.e_shoff + i * eh.e_shentsize;
    if (at + sizeof(sh) > image.size()) throw fail("a section header past the end");
    std::memcpy(&sh, image.data() + at, sizeof(sh));
    return sh;
  };
  ElfObjects out;
  for (const unsigned type : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (std::size_t i = 0; i < eh.e_shnum; ++i) {
      const Elf64_Shdr sh = section(i);
      if (sh.sh_type != type || sh.sh_entsize != sizeof(Elf64_Sym)) continue;
      const Elf64_Shdr names = section(sh.sh_link);
      if (sh.sh_offset + sh.sh_size > image.size() ||
          names.sh_offset + names.sh_size > image.size())
        throw fail("a symbol table past the end");
      for (std::uint64_t at = sh.sh_offset; at + sizeof(Elf64_Sym) <= sh.sh_offset + sh.sh_size;
           at += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, image.data() + at, sizeof(sym));
        if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF ||
            sym.st_name >= names.sh_size)
          continue;
        const char* name = image.data() + names.sh_offset + sym.st_name;
        out.emplace(std::string(name, strnlen(name, names.sh_size - sym.st_name)),
                    std::make_pair(std::uint64_t{sym.st_value}, std::uint64_t{sym.st_size}));
      }
    }
    if (!out.empty()) break;  // .symtab found: .dynsym holds a part of it
  }
  return out;
}
}  // namespace

void* emulated_global(EmulatedKernel& kernel, std::string_view name, std::size_t* bytes) {
  EmulatedLibrary& k = *kernel.library;
  std::lock_guard lock(k.objects_mutex);
  if (!k.objects) k.objects = elf_objects(k.file);
  const auto it = k.objects->find(std::string(name));
  if (it == k.objects->end()) return nullptr;
  link_map* map = nullptr;
  if (dlinfo(k.handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr)
    throw Error("the kernel emulator: cannot find where " + k.file.string() + " is loaded");
  *bytes = static_cast<std::size_t>(it->second.second);
  return reinterpret_cast<void*>(map->l_addr + it->second.first);
}

}  // namespace cunumpy::detail
