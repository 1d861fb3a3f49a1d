#include <csrc/emulation/fallback/OpPlan.h>

#include <c10/util/flat_hash_map.h>

#include <memory>
#include <shared_mutex>
#include <string_view>
#include <unordered_set>

namespace at::native::accinte {
namespace {

// Operators whose output shapes depend on the values of their inputs: they
// must wait for their inputs, so they always take the synchronous path.
bool is_data_dependent(std::string_view name) {
  static const std::unordered_set<std::string_view> ops = {
      "aten::nonzero", "aten::argwhere", "aten::masked_select", "aten::unique_dim",
      "aten::_unique", "aten::_unique2", "aten::unique_consecutive", "aten::unique_dim_consecutive",
      "aten::repeat_interleave", "aten::bincount", "aten::histc", "aten::histogram",
      "aten::_histogramdd_from_bin_cts", "aten::_histogramdd_bin_edges", "aten::equal",
      "aten::is_nonzero", "aten::_local_scalar_dense", "aten::item", "aten::_assert_async",
      "aten::_assert_async.msg", "aten::_linalg_check_errors", "aten::segment_reduce",
      "aten::_nested_tensor_from_mask", "aten::to_sparse", "aten::_to_sparse",
  };
  return ops.count(name) > 0;
}

// Operators whose CUDA kernels wait for their inputs, so that the errors
// they find in the values are raised at the call there: linalg.eig's and
// eigvals' are computed on the host (MAGMA's geev), after a .item() check that
// the input holds no infs or NaNs. They always take the synchronous path.
bool waits_for_its_inputs_on_cuda(std::string_view name) {
  static const std::unordered_set<std::string_view> ops = {
      "aten::linalg_eig", "aten::linalg_eigvals", "aten::_linalg_eigvals",
  };
  return ops.count(name) > 0;
}

// Operators whose CPU kernels index memory with integer tensors that another
// kernel made (the forward's bag offsets, the pooling's argmax) and so do not
// check them: made-up values would read or write out of bounds. Their first
// call of a signature runs on the real arguments (OpPlan::trusts_its_indices).
bool trusts_its_indices(std::string_view name) {
  static const std::unordered_set<std::string_view> ops = {
      "aten::_embedding_bag_backward", "aten::_embedding_bag_dense_backward",
      "aten::_embedding_bag_sparse_backward", "aten::_embedding_bag_per_sample_weights_backward",
      "aten::max_pool2d_with_indices_backward", "aten::max_pool3d_with_indices_backward",
      "aten::adaptive_max_pool2d_backward", "aten::adaptive_max_pool3d_backward",
      "aten::fractional_max_pool2d_backward", "aten::fractional_max_pool3d_backward",
  };
  return ops.count(name) > 0;
}

bool is_tensor_type(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::TensorType;
}

bool is_tensor_list_type(const c10::TypePtr& type) {
  const auto* list = type->castRaw<c10::ListType>();
  return list != nullptr && list->getElementType()->kind() == c10::TypeKind::TensorType;
}

// The argument whose alias set a return shares, or -1.
int aliased_argument(const c10::FunctionSchema& schema, const c10::Argument& ret) {
  const c10::AliasInfo* info = ret.alias_info();
  if (info == nullptr) {
    return -1;
  }
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::AliasInfo* arg_info = args[i].alias_info();
    if (arg_info != nullptr && arg_info->beforeSets() == info->beforeSets()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// The out= overload of a functional operator: same leading arguments, then
// one output argument per return.
std::optional<c10::OperatorHandle> find_out_variant(const c10::FunctionSchema& schema) {
  static const auto* by_name = [] {
    auto* index = new ska::flat_hash_map<std::string, std::vector<c10::OperatorName>>();
    for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
      (*index)[name.name].push_back(name);
    }
    return index;
  }();
  const auto found = by_name->find(schema.name());
  if (found == by_name->end()) {
    return std::nullopt;
  }
  const auto& args = schema.arguments();
  for (const auto& name : found->second) {
    auto handle = c10::Dispatcher::singleton().findSchema(name);
    if (!handle) {
      continue;
    }
    const auto& candidate = handle->schema();
    const auto& cargs = candidate.arguments();
    if (cargs.size() != args.size() + schema.returns().size()) {
      continue;
    }
    bool matches = true;
    for (size_t i = 0; i < args.size() && matches; ++i) {
      matches = cargs[i].name() == args[i].name() && *cargs[i].type() == *args[i].type() &&
                !cargs[i].is_out();
    }
    for (size_t i = args.size(); i < cargs.size() && matches; ++i) {
      matches = cargs[i].is_out() &&
                cargs[i].type()->kind() == schema.returns()[i - args.size()].type()->kind();
    }
    if (matches) {
      return handle;
    }
  }
  return std::nullopt;
}

std::unique_ptr<OpPlan> make_plan(const c10::OperatorHandle& op) {
  auto plan = std::make_unique<OpPlan>();
  const auto& schema = op.schema();
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].alias_info() != nullptr && args[i].alias_info()->isWrite()) {
      plan->mutated_args.push_back(static_cast<int>(i));
    }
  }
  bool returns_only_tensors = true;
  bool has_fresh_return = false;
  for (const auto& ret : schema.returns()) {
    OpPlan::ReturnInfo info;
    info.is_list = is_tensor_list_type(ret.type());
    returns_only_tensors &= info.is_list || is_tensor_type(ret.type());
    info.arg = aliased_argument(schema, ret);
    if (info.arg >= 0) {
      info.kind = ret.alias_info()->isWrite() ? OpPlan::Return::kMutated : OpPlan::Return::kView;
    } else {
      has_fresh_return = true;
    }
    plan->returns.push_back(info);
  }
  const std::string& name = schema.name();
  plan->accepts_host_tensors = name == "aten::index" || name == "aten::index_put_" ||
                               name == "aten::_index_put_impl_" || name == "aten::index_put";
  {
    // "Meta: registered at <file>:<line>"; Python registrations name a .py file.
    const std::string table = op.dumpComputedTable();
    const auto line = table.find("\nMeta: ");
    const auto end = table.find('\n', line + 1);
    plan->meta_is_python = line != std::string::npos &&
                           table.substr(line, end - line).find(".py:") != std::string::npos;
  }
  plan->outputs_given = !plan->mutated_args.empty();
  for (const auto& ret : plan->returns) {
    plan->outputs_given &= ret.kind == OpPlan::Return::kMutated;
  }
  for (const auto& arg : args) {
    const auto* list = arg.type()->castRaw<c10::ListType>();
    plan->takes_indices |= list != nullptr &&
                           list->getElementType()->kind() == c10::TypeKind::OptionalType;
  }
  for (const auto& arg : args) {
    const c10::TypePtr& type = arg.type();
    const auto* optional = type->castRaw<c10::OptionalType>();
    plan->draws_random |= (optional ? optional->getElementType() : type)->kind() ==
                          c10::TypeKind::GeneratorType;
  }
  plan->trusts_its_indices = trusts_its_indices(name);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name() == "check_errors" &&
        args[i].type()->kind() == c10::TypeKind::BoolType) {
      plan->check_errors_arg = static_cast<int>(i);
    }
  }
  plan->can_run_async = returns_only_tensors && !is_data_dependent(name) &&
                        !waits_for_its_inputs_on_cuda(name) &&
                        !is_data_dependent(name + "." + schema.overload_name()) &&
                        op.hasKernelForDispatchKey(c10::DispatchKey::Meta);
  if (plan->can_run_async && has_fresh_return) {
    plan->out_variant = find_out_variant(schema);
  }
  return plan;
}

// The process's plans, made once per operator and never freed or changed:
// the references handed out stay valid.
const OpPlan& shared_plan_for(const c10::OperatorHandle& op) {
  static std::shared_mutex mutex;
  static ska::flat_hash_map<c10::OperatorHandle, std::unique_ptr<OpPlan>> plans;
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    auto it = plans.find(op);
    if (it != plans.end()) {
      return *it->second;
    }
  }
  auto plan = make_plan(op);
  std::unique_lock<std::shared_mutex> lock(mutex);
  auto [it, inserted] = plans.emplace(op, std::move(plan));
  return *it->second;
}

} // namespace

// Every call that reaches the fallback asks for its operator's plan; a
// thread remembers the plans it was given, so that its later calls find
// them without the shared lock (an atomic read-modify-write on a line every
// launching thread writes, twice per call).
const OpPlan& plan_for(const c10::OperatorHandle& op) {
  thread_local ska::flat_hash_map<c10::OperatorHandle, const OpPlan*> mine;
  if (const auto it = mine.find(op); it != mine.end()) {
    return *it->second;
  }
  const OpPlan& plan = shared_plan_for(op);
  mine.emplace(op, &plan);
  return plan;
}

} // namespace at::native::accinte
