# ReinforcementLearningBase support, loaded when RLBase is: `Herd.rlbase_env(world)` is the world as an
# RLBase.AbstractEnv, through RLBase's own CommonRLInterface bridge (state = observe, action_space =
# actions, reward = the last act!'s reward, is_terminated = terminated, reset! = reset!).
module HerdRLBaseExt

import Herd
import ReinforcementLearningBase as RLBase

Herd.rlbase_env(w::Herd.World) = convert(RLBase.AbstractEnv, w)

end
