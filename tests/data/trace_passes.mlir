// -----// IR Dump Before AggressivePropagationPass (sdy-aggressive-propagate) ('builtin.module' operation: @SyncTensorsGraph.12) //----- //
module @SyncTensorsGraph.12 attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["batch"=2, "model"=4]>
  func.func @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}]>} loc("p0.1"), %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>} loc("p1.1"), %arg2: tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>} loc("p2.1")) -> tensor<16x64xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32> loc(#loc3)
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<64xf32>) -> tensor<16x64xf32> loc(#loc4)
    %2 = stablehlo.add %0, %1 : tensor<16x64xf32> loc(#loc5)
    return %2 : tensor<16x64xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("dot.3")
#loc4 = loc("broadcast.4")
#loc5 = loc("add.5")


// -----// IR Dump After AggressivePropagationPass (sdy-aggressive-propagate) ('builtin.module' operation: @SyncTensorsGraph.12) //----- //
module @SyncTensorsGraph.12 attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["batch"=2, "model"=4]>
  func.func @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}]>} loc("p0.1"), %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>} loc("p1.1"), %arg2: tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>} loc("p2.1")) -> (tensor<16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {"model"}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32> loc(#loc3)
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : (tensor<64xf32>) -> tensor<16x64xf32> loc(#loc4)
    %2 = stablehlo.add %0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : tensor<16x64xf32> loc(#loc5)
    return %2 : tensor<16x64xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("dot.3")
#loc4 = loc("broadcast.4")
#loc5 = loc("add.5")


// -----// IR Dump After InsertExplicitReshardsPass (sdy-insert-explicit-reshards) ('builtin.module' operation: @SyncTensorsGraph.12) //----- //
module @SyncTensorsGraph.12 attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["batch"=2, "model"=4]>
  func.func @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"batch"}]>} loc("p0.1"), %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>} loc("p1.1"), %arg2: tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>} loc("p2.1")) -> (tensor<16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {"model"}]>}) {
    %0 = sdy.reshard %arg0 <@mesh, [{"batch"}, {}]> : tensor<16x32xf32> loc(#loc6)
    %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32> loc(#loc3)
    %2 = stablehlo.broadcast_in_dim %arg2, dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : (tensor<64xf32>) -> tensor<16x64xf32> loc(#loc4)
    %3 = stablehlo.add %1, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : tensor<16x64xf32> loc(#loc5)
    return %3 : tensor<16x64xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("dot.3")
#loc4 = loc("broadcast.4")
#loc5 = loc("add.5")
#loc6 = loc("reshard.6")


// -----// IR Dump Before AnalyzeMeshPass (analyze-mesh) ('builtin.module' operation: @SyncTensorsGraph.12) //----- //
module @SyncTensorsGraph.12 attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["model"=4, "batch"=2]>
  func.func @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"batch"}]>} loc("p0.1"), %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>} loc("p1.1"), %arg2: tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>} loc("p2.1")) -> (tensor<16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {"model"}]>}) {
    %0 = sdy.reshard %arg0 <@mesh, [{"batch"}, {}]> : tensor<16x32xf32> loc(#loc6)
    %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32> loc(#loc3)
    %2 = stablehlo.broadcast_in_dim %arg2, dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : (tensor<64xf32>) -> tensor<16x64xf32> loc(#loc4)
    %3 = stablehlo.add %1, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {"model"}]>]>} : tensor<16x64xf32> loc(#loc5)
    return %3 : tensor<16x64xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("dot.3")
#loc4 = loc("broadcast.4")
#loc5 = loc("add.5")
#loc6 = loc("reshard.6")
